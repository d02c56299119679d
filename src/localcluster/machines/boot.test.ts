import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderUserData } from "../../nodes/index.js";
import { kubeletFlagsOf, parseCloudConfig, startsKubelet, writeFiles } from "./boot.js";

const userData = renderUserData({
  nodeName: "my-node-01",
  server: "https://127.0.0.1:6443",
  caPem: "ca",
  token: { id: "abcdef", secret: "0123456789abcdef", expiration: new Date() },
  labels: { a: "1", "tenantry.dev/node-owner": "alice" },
  taints: [{ key: "tenantry.dev/node-owner", value: "alice", effect: "NoSchedule" }],
});

describe("a simulated machine's cloud-init", () => {
  it("writes the user data's files under its root, with their permissions, and sees the kubelet started", async () => {
    const root = await mkdtemp(join(tmpdir(), "tenantry-boot-"));
    try {
      const config = parseCloudConfig(userData);
      await writeFiles(root, config);
      assert.ok(startsKubelet(config));
      const bootstrap = join(root, "etc/kubernetes/bootstrap-kubelet.conf");
      assert.match(await readFile(bootstrap, "utf8"), /token: abcdef\.0123456789abcdef/);
      assert.equal((await stat(bootstrap)).mode & 0o777, 0o600);
      const flags = kubeletFlagsOf(await readFile(join(root, "etc/default/kubelet"), "utf8"));
      assert.equal(flags.get("hostname-override"), "my-node-01");
      assert.equal(flags.get("node-labels"), "a=1,tenantry.dev/node-owner=alice");
      assert.equal(flags.get("register-with-taints"), "tenantry.dev/node-owner=alice:NoSchedule");
      assert.equal(flags.get("bootstrap-kubeconfig"), "/etc/kubernetes/bootstrap-kubelet.conf");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("refuses user data that is not a cloud-config document, and starts no kubelet without runcmd", () => {
    assert.throws(() => parseCloudConfig("#!/bin/sh\necho hi\n"), /not a #cloud-config document/);
    assert.equal(startsKubelet(parseCloudConfig("#cloud-config\nruncmd: [[echo, hi]]\n")), false);
    assert.equal(startsKubelet({ runcmd: ["systemctl start kubelet"] }), true);
  });
});
