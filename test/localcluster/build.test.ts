import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { UserError } from "../../src/common/index.js";
import { ensureComponents } from "../../src/localcluster/index.js";

const quiet = () => ({ update() {}, log() {}, finish() {} });

describe("building the Kubernetes components", () => {
  let cacheDir: string;
  before(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), "tenantry-build-"));
  });
  after(async () => {
    await rm(cacheDir, { recursive: true, force: true });
  });

  test("reuses the cache: a second call builds nothing", async () => {
    const first = await ensureComponents({ progress: quiet });
    const started = Date.now();
    const second = await ensureComponents({ progress: quiet });
    assert.deepEqual(second, first);
    assert.ok(Date.now() - started < 5000, "cached lookup should not build");
    assert.match(first.versions.kubernetes, /^v1\.33\.\d+$/);
    assert.match(first.versions.etcd, /^v3\.5\.\d+$/);
  });

  test("a missing Go toolchain gives one line saying what to install", async () => {
    await assert.rejects(
      ensureComponents({ cacheDir, env: { ...process.env, PATH: "/nonexistent" }, progress: quiet }),
      (err: Error) => {
        assert.ok(err instanceof UserError);
        assert.match(err.message, /^go was not found on PATH: .*install Go/);
        return true;
      },
    );
  });

  test("an unreachable module proxy is reported as such", async () => {
    const env = {
      ...process.env,
      GOPROXY: "http://127.0.0.1:9",
      GOSUMDB: "off",
      GOTOOLCHAIN: "local",
      GOMODCACHE: join(cacheDir, "empty-modcache"),
      GOFLAGS: "-modcacherw",
    };
    await assert.rejects(ensureComponents({ cacheDir, env, progress: quiet }), (err: Error) => {
      assert.ok(err instanceof UserError, String(err));
      assert.match(
        err.message,
        /^cannot download the Go modules for kubernetes \(GOPROXY=http:\/\/127\.0\.0\.1:9\): .*connection refused.* check the network or GOPROXY/,
      );
      return true;
    });
  });
});
