import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ConfigMap, V1Container, V1Pod, V1Secret } from "@kubernetes/client-node";
import {
  ContainerConfigError,
  containerEnv,
  type EnvSources,
  expandReferences,
  fieldValue,
  resourceValue,
} from "./env.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** Objects of one namespace, looked up as the kubelet reads them from the API. */
function objectSources(objects: { configMaps?: V1ConfigMap[]; secrets?: V1Secret[] }): EnvSources {
  return {
    configMap: async (_ns, name) => objects.configMaps?.find((c) => c.metadata?.name === name),
    secret: async (_ns, name) => objects.secrets?.find((s) => s.metadata?.name === name),
  };
}

const pod: V1Pod = {
  metadata: {
    name: "web-1",
    namespace: "team",
    uid: "u-1",
    labels: { b: "2", a: "1" },
    annotations: { note: "x" },
  },
  spec: { nodeName: "process-node-0", serviceAccountName: "runner", containers: [] },
};
const addresses = { podIP: "127.81.0.9", hostIP: "127.0.0.1" };

describe("container environment", () => {
  test("$(VAR) expands defined variables, keeps undefined ones, and $$ escapes", () => {
    const env = new Map([
      ["A", "x"],
      ["B", "y"],
    ]);
    assert.equal(expandReferences("$(A)-$(B)", env), "x-y");
    assert.equal(expandReferences("$(C) stays", env), "$(C) stays");
    assert.equal(expandReferences("$$(A) and $$ and $", env), "$(A) and $ and $");
    assert.equal(expandReferences("open $(A", env), "open $(A");
    assert.equal(expandReferences("cost: $5", env), "cost: $5");
  });

  test("downward API fields", () => {
    assert.equal(fieldValue(pod, "metadata.name", addresses), "web-1");
    assert.equal(fieldValue(pod, "metadata.labels['a']", addresses), "1");
    assert.equal(fieldValue(pod, "metadata.labels", addresses), 'a="1"\nb="2"');
    assert.equal(fieldValue(pod, "metadata.annotations['note']", addresses), "x");
    assert.equal(fieldValue(pod, "status.podIP", addresses), "127.81.0.9");
    assert.equal(fieldValue(pod, "spec.serviceAccountName", addresses), "runner");
    assert.throws(() => fieldValue(pod, "spec.nope", addresses), ContainerConfigError);
  });

  test("resource fields are divided and rounded up; an unset limit is the node's allocatable", () => {
    const container: V1Container = {
      name: "c",
      resources: { limits: { memory: "1Gi" }, requests: { cpu: "250m" } },
    };
    assert.equal(resourceValue(container, "limits.memory", "1Mi", {}), "1024");
    assert.equal(resourceValue(container, "requests.cpu", undefined, {}), "1");
    assert.equal(resourceValue(container, "requests.cpu", "1m", {}), "250");
    assert.equal(resourceValue(container, "limits.cpu", undefined, { cpu: "32" }), "32");
  });

  test("envFrom, then env in order with references to earlier values, secrets and config maps decoded", async () => {
    const container: V1Container = {
      name: "c",
      envFrom: [{ configMapRef: { name: "settings" }, prefix: "CFG_" }, { secretRef: { name: "creds" } }],
      env: [
        { name: "PORT", value: "8080" },
        { name: "URL", value: "http://$(MY_IP):$(PORT)/$(CFG_mode)" },
        { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "TOKEN", valueFrom: { secretKeyRef: { name: "creds", key: "token" } } },
        { name: "MODE", valueFrom: { configMapKeyRef: { name: "settings", key: "mode" } } },
        { name: "MISSING", valueFrom: { configMapKeyRef: { name: "nope", key: "k", optional: true } } },
      ],
    };
    const env = await containerEnv(
      pod,
      container,
      objectSources({
        configMaps: [{ metadata: { name: "settings" }, data: { mode: "fast" } }],
        secrets: [{ metadata: { name: "creds" }, data: { token: b64("s3cret"), user: b64("bob") } }],
      }),
      addresses,
      {},
      new Map([["HOSTNAME", "web-1"]]),
    );
    assert.equal(env.get("CFG_mode"), "fast");
    assert.equal(env.get("user"), "bob");
    // MY_IP is defined after URL, so its reference stays as written, as in Kubernetes.
    assert.equal(env.get("URL"), "http://$(MY_IP):8080/fast");
    assert.equal(env.get("TOKEN"), "s3cret");
    assert.equal(env.get("MODE"), "fast");
    assert.equal(env.get("HOSTNAME"), "web-1");
    assert.ok(!env.has("MISSING"));
  });

  test("a missing secret or key is a configuration error naming it", async () => {
    const sources = objectSources({ secrets: [{ metadata: { name: "creds" }, data: {} }] });
    const withEnv = (env: V1Container["env"]) =>
      containerEnv(pod, { name: "c", env }, sources, addresses, {});
    await assert.rejects(
      withEnv([{ name: "T", valueFrom: { secretKeyRef: { name: "other", key: "k" } } }]),
      (err: Error) => err instanceof ContainerConfigError && err.message === 'secret "other" not found',
    );
    await assert.rejects(
      withEnv([{ name: "T", valueFrom: { secretKeyRef: { name: "creds", key: "k" } } }]),
      /couldn't find key k in Secret team\/creds/,
    );
  });
});
