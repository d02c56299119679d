import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import {
  bootstrapKubeconfig,
  bootstrapTokenSecret,
  kubeletFlags,
  newBootstrapToken,
  renderUserData,
  tokenIdOfUser,
  tokenOfSecret,
} from "./join.js";
import { BOOTSTRAP_GROUP, WORKER_NODE_LABEL, WORKER_NODE_UID_LABEL } from "./labels.js";

const expiration = new Date("2030-01-02T03:04:05.678Z");

describe("bootstrap tokens", () => {
  it("are drawn in kube-apiserver's format", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const token = newBootstrapToken(expiration);
      assert.match(token.id, /^[a-z0-9]{6}$/);
      assert.match(token.secret, /^[a-z0-9]{16}$/);
      seen.add(token.id);
    }
    assert.ok(seen.size > 45, "ids are random");
  });

  it("live in kube-system/bootstrap-token-<id>, for authentication only, with tenantry's group, labelled for their node", () => {
    const token = { id: "abcdef", secret: "0123456789abcdef", expiration };
    const secret = bootstrapTokenSecret(token, { name: "my-node-01", uid: "u-1" });
    assert.equal(secret.metadata?.name, "bootstrap-token-abcdef");
    assert.equal(secret.metadata?.namespace, "kube-system");
    assert.equal(secret.type, "bootstrap.kubernetes.io/token");
    assert.deepEqual(secret.metadata?.labels?.[WORKER_NODE_LABEL], "my-node-01");
    assert.deepEqual(secret.metadata?.labels?.[WORKER_NODE_UID_LABEL], "u-1");
    assert.deepEqual(
      { ...secret.stringData, description: undefined },
      {
        description: undefined,
        "token-id": "abcdef",
        "token-secret": "0123456789abcdef",
        expiration: "2030-01-02T03:04:05Z",
        "usage-bootstrap-authentication": "true",
        "auth-extra-groups": BOOTSTRAP_GROUP,
      },
    );
    assert.ok(BOOTSTRAP_GROUP.startsWith("system:bootstrappers:"), "kube-apiserver accepts only this prefix");
    // As the API server returns it: base64 data.
    const stored = {
      ...secret,
      stringData: undefined,
      data: Object.fromEntries(
        Object.entries(secret.stringData!).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
      ),
    };
    assert.deepEqual(tokenOfSecret(stored), {
      id: "abcdef",
      secret: "0123456789abcdef",
      expiration: new Date("2030-01-02T03:04:05Z"),
    });
  });

  it("name their user system:bootstrap:<id>", () => {
    assert.equal(tokenIdOfUser("system:bootstrap:abc123"), "abc123");
    assert.equal(tokenIdOfUser("system:bootstrap:ABC123"), undefined);
    assert.equal(tokenIdOfUser("system:node:abc123"), undefined);
    assert.equal(tokenIdOfUser(undefined), undefined);
  });
});

describe("user data", () => {
  const config = {
    nodeName: "my-node-01",
    server: "https://127.0.0.1:6443",
    caPem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    token: { id: "abcdef", secret: "0123456789abcdef", expiration },
    labels: { "tenantry.dev/node-owner": "alice", "tenantry.dev/node-policy": "private" },
    taints: [{ key: "tenantry.dev/node-owner", value: "alice", effect: "NoSchedule" }],
  };

  it("is a cloud-config document that writes the kubelet's bootstrap kubeconfig and flags and starts it", () => {
    const text = renderUserData(config);
    assert.ok(text.startsWith("#cloud-config\n"), "cloud-init reads only documents that say so");
    const document = parse(text) as {
      write_files: { path: string; content: string; permissions: string }[];
      runcmd: string[][];
    };
    const files = Object.fromEntries(document.write_files.map((f) => [f.path, f]));
    assert.equal(
      files["/etc/kubernetes/bootstrap-kubelet.conf"]?.permissions,
      "0600",
      "the token is for root only",
    );
    const kubeconfig = parse(files["/etc/kubernetes/bootstrap-kubelet.conf"]!.content) as {
      clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
      users: { user: { token: string } }[];
    };
    assert.equal(kubeconfig.clusters[0]?.cluster.server, "https://127.0.0.1:6443");
    assert.equal(
      Buffer.from(kubeconfig.clusters[0]!.cluster["certificate-authority-data"], "base64").toString(),
      config.caPem,
    );
    assert.equal(kubeconfig.users[0]?.user.token, "abcdef.0123456789abcdef");
    assert.equal(files["/etc/kubernetes/pki/ca.crt"]?.content, config.caPem);
    assert.equal(
      files["/etc/default/kubelet"]?.content,
      'KUBELET_EXTRA_ARGS="--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --hostname-override=my-node-01 --node-labels=tenantry.dev/node-owner=alice,tenantry.dev/node-policy=private --register-with-taints=tenantry.dev/node-owner=alice:NoSchedule"\n',
    );
    assert.deepEqual(document.runcmd, [["systemctl", "enable", "--now", "kubelet"]]);
  });

  it("leaves out labels and taints when there are none", () => {
    assert.deepEqual(kubeletFlags({ nodeName: "n", labels: {}, taints: [] }), [
      "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
      "--kubeconfig=/etc/kubernetes/kubelet.conf",
      "--hostname-override=n",
    ]);
    assert.match(bootstrapKubeconfig(config), /current-context: tls-bootstrap/);
  });
});
