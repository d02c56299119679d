import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { silentLogger } from "../../kube/index.js";
import { probeHost } from "./capabilities.js";
import {
  allocateDirectory,
  allocateImage,
  destroyDirectory,
  destroyImage,
  isMountPoint,
  lockLoopData,
  mountImage,
  prepareDirectoryData,
  preparedFor,
  prepareLoopData,
  volumePaths,
  volumesOnStore,
} from "./volume-files.js";

describe("volume files", () => {
  let store: string;
  before(async () => {
    store = await mkdtemp(join(tmpdir(), "tenantry-volume-files-"));
  });
  after(async () => {
    await rm(store, { recursive: true, force: true });
  });

  test("a Directory volume: a data folder made for one claim, marked with its uid, removed whole", async () => {
    const paths = volumePaths(store, "plain");
    await allocateDirectory(paths);
    assert.equal(await preparedFor(paths, "Directory"), undefined);
    await prepareDirectoryData(paths, "claim-1");
    assert.equal(await preparedFor(paths, "Directory"), "claim-1");
    assert.equal((await stat(paths.dirData)).mode & 0o777, 0o777, "any user of the pod may write");
    await writeFile(join(paths.dirData, "f"), "x");
    await prepareDirectoryData(paths, "claim-1");
    assert.deepEqual(await readdir(paths.dirData), ["f"], "preparing again keeps the data");
    assert.deepEqual([...(await volumesOnStore(store))], ["plain"]);
    await destroyDirectory(paths);
    assert.ok(!existsSync(paths.dir));
    assert.deepEqual([...(await volumesOnStore(store))], []);
  });

  test("a loop volume: sparse, mounted, encrypted for its claim, locked, destroyed", async (t) => {
    const caps = await probeHost({ installTools: false, logger: silentLogger });
    if (!caps.loop.ok) return t.skip(`loop volumes are not possible here: ${caps.loop.message}`);
    const paths = volumePaths(store, "loop");
    assert.equal(await allocateImage(paths, 32n * 1024n * 1024n), true);
    assert.equal(await allocateImage(paths, 32n * 1024n * 1024n), false, "an existing file is kept");
    const file = await stat(paths.image);
    assert.equal(file.size, 32 * 1024 * 1024);
    assert.ok(file.blocks * 512 < 4 * 1024 * 1024, `sparse: ${file.blocks * 512} bytes on disk`);
    assert.equal(await mountImage(paths), true);
    assert.equal(await mountImage(paths), false, "mounted once");
    assert.ok(await isMountPoint(paths.mount));
    try {
      const key = caps.encryption.ok ? randomBytes(32) : undefined;
      await prepareLoopData(paths, key, "tenant.test", "claim-9");
      assert.equal(await preparedFor(paths, "LoopExt4"), "claim-9");
      await writeFile(join(paths.loopData, "hello.txt"), "hello");
      if (key) {
        await lockLoopData(paths);
        const names = await readdir(paths.loopData);
        assert.ok(!names.includes("hello.txt"), `locked names are encrypted: ${names}`);
        await assert.rejects(readFile(join(paths.loopData, names[0]!)), /ENOKEY|key not available|-126/i);
        await prepareLoopData(paths, key, "tenant.test", "claim-9");
        assert.equal(await readFile(join(paths.loopData, "hello.txt"), "utf8"), "hello", "unlocked again");
      }
    } finally {
      await destroyImage(paths);
    }
    assert.ok(!(await isMountPoint(paths.mount)));
    assert.ok(!existsSync(paths.image) && !existsSync(paths.mount));
  });
});
