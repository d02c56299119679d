import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { GenericPlugin } from "../plugins/generic.js";
import { RUNTIME_LABEL, RUNTIME_SERVICE_LABEL } from "../plugins/spi.js";
import {
  AGENT_CONTAINER,
  AGENT_ENV,
  AGENT_SERVICE_ACCOUNT,
  AGENT_SIDECAR_ENV,
  buildManifest,
  ENDPOINT_ANNOTATION,
  ManifestError,
} from "./manifest.js";

const context = {
  namespace: "acme-rt-alice",
  name: "echo-main",
  service: "echo",
  stopUrl: "http://127.0.0.1:9000/services/alice/echo/main/stop",
  pods: {
    nodeSelector: { "tenantry.dev/process-node": "true" },
    tolerations: [{ key: "tenantry.dev/process-node", operator: "Equal" as const, value: "true" }],
    priorityClassName: "runtimes",
  },
};

const deployment = (extra: Record<string, unknown> = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "echo-main" },
  spec: {
    selector: { matchLabels: { app: "echo" } },
    template: {
      metadata: { labels: { app: "echo" } },
      spec: { containers: [{ name: "echo", image: "echo:1", ports: [{ containerPort: 8080 }] }] },
    },
    ...extra,
  },
});

const yamlOf = (...objects: object[]) => objects.map((o) => stringify(o)).join("---\n");

function refusal(yaml: string): ManifestError {
  try {
    buildManifest({ yaml }, context);
  } catch (err) {
    assert.ok(err instanceof ManifestError, String(err));
    return err;
  }
  assert.fail("the manifest was accepted");
}

describe("a plugin's manifest", () => {
  it("stamps labels, placement and the agent on the workload, keeps the plugin's own", async () => {
    const deployed = await new GenericPlugin().deployService({
      registration: {
        user: "alice",
        tenant: "acme",
        service: "echo",
        instance: "main",
        namespace: context.namespace,
        name: context.name,
        cluster: "home",
        basePath: "/r/tok/",
      },
      config: { image: "docker.io/jmalloc/echo-server:0.3.7", port: 8080, volumeSize: "1Gi" },
    });
    const { objects, endpoint } = buildManifest(deployed, context);
    assert.deepEqual(
      objects.map((o) => o.kind),
      ["PersistentVolumeClaim", "Service", "Deployment"],
    );
    assert.deepEqual(endpoint, { port: 8080, path: "" });
    for (const object of objects) {
      assert.equal(object.metadata?.namespace, context.namespace);
      assert.equal(object.metadata?.labels?.[RUNTIME_LABEL], context.name);
      assert.equal(object.metadata?.labels?.[RUNTIME_SERVICE_LABEL], "echo");
    }
    const workload = objects.find((o) => o.kind === "Deployment") as V1Deployment;
    assert.equal(workload.metadata?.annotations?.[ENDPOINT_ANNOTATION], JSON.stringify(endpoint));
    const pod = workload.spec!.template;
    assert.equal(pod.metadata?.labels?.[RUNTIME_LABEL], context.name);
    assert.equal(pod.metadata?.labels?.["app.kubernetes.io/instance"], context.name);
    assert.equal(pod.spec?.serviceAccountName, AGENT_SERVICE_ACCOUNT);
    assert.equal(pod.spec?.automountServiceAccountToken, false);
    assert.deepEqual(pod.spec?.nodeSelector, context.pods.nodeSelector);
    assert.deepEqual(pod.spec?.tolerations, context.pods.tolerations);
    assert.equal(pod.spec?.priorityClassName, "runtimes");
    const token = pod.spec?.volumes?.find((v) => v.projected)?.projected?.sources?.[0]?.serviceAccountToken;
    assert.equal(token?.audience, "tenantry-runtimes");
    const container = pod.spec!.containers[0]!;
    assert.equal(container.env?.find((e) => e.name === AGENT_ENV.stopUrl)?.value, context.stopUrl);
    assert.ok(container.readinessProbe?.httpGet, "the generic plugin probes the port");
    assert.ok(container.volumeMounts?.some((m) => m.mountPath === "/data"));
    assert.equal(workload.spec?.replicas, 1);
  });

  it("the endpoint port defaults to the first container port; a path loses its trailing slash", () => {
    const { endpoint } = buildManifest(
      { yaml: yamlOf(deployment()), endpoint: { path: "/r/tok/" } },
      context,
    );
    assert.deepEqual(endpoint, { port: 8080, path: "/r/tok" });
  });

  it("refuses a forbidden kind, naming it", () => {
    const err = refusal(
      yamlOf(deployment(), {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "echo-main" },
      }),
    );
    assert.equal(err.field, "objects[1].kind");
    assert.match(err.message, /RoleBinding is not allowed/);
  });

  it("refuses another namespace, naming it", () => {
    const err = refusal(
      yamlOf(deployment(), {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "echo-main-x", namespace: "kube-system" },
      }),
    );
    assert.equal(err.field, "objects[1].metadata.namespace");
    assert.match(err.message, /kube-system/);
  });

  it("refuses names outside the runtime's prefix, two workloads, none, more replicas, other Service types", () => {
    assert.equal(
      refusal(yamlOf({ ...deployment(), metadata: { name: "someone-else" } })).field,
      "objects[0].metadata.name",
    );
    assert.equal(
      refusal(yamlOf(deployment(), { ...deployment(), metadata: { name: "echo-main-2" } })).field,
      "objects",
    );
    assert.equal(
      refusal(yamlOf({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "echo-main" } })).field,
      "objects",
    );
    assert.equal(refusal(yamlOf(deployment({ replicas: 3 }))).field, "objects[0].spec.replicas");
    assert.equal(
      refusal(
        yamlOf(deployment(), {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "echo-main" },
          spec: { type: "NodePort", ports: [{ port: 80 }] },
        }),
      ).field,
      "objects[1].spec.type",
    );
    assert.equal(refusal(yamlOf(deployment(), deployment())).field, "objects[1].metadata.name");
  });

  it("refuses what tenantry sets: service account, owners", () => {
    const withAccount = deployment();
    (withAccount.spec.template.spec as Record<string, unknown>).serviceAccountName = "admin";
    assert.equal(refusal(yamlOf(withAccount)).field, "objects[0].spec.template.spec.serviceAccountName");
    assert.equal(
      refusal(yamlOf({ ...deployment(), metadata: { name: "echo-main", ownerReferences: [] } })).field,
      "objects[0].metadata.ownerReferences",
    );
  });

  it("refuses text that is not YAML objects", () => {
    assert.match(refusal("a: [1").message, /not valid YAML/);
    assert.match(refusal("- 1\n").message, /not an object/);
    assert.match(refusal("").message, /no objects/);
  });
});

describe("the runtime agent sidecar", () => {
  const agent = {
    spec: { activity: { path: "/api/status", tokenFromEnv: "JUPYTER_TOKEN" }, periodSeconds: 30 },
    image: "ghcr.io/tenantry/runtime-agent:0.1.0",
    reportUrl: "http://127.0.0.1:9000/services/alice/echo/main/activity",
  };
  const withToken = deployment();
  (withToken.spec.template.spec.containers[0] as { env?: unknown }).env = [
    { name: "JUPYTER_TOKEN", valueFrom: { secretKeyRef: { name: "echo-main-token", key: "token" } } },
  ];

  it("reads the runtime's activity on its own address and port, with the token its container has", () => {
    const manifest = buildManifest(
      { yaml: yamlOf(withToken), endpoint: { port: 8888, path: "/r/abc" } },
      { ...context, agent },
    );
    const pod = (manifest.objects[0] as V1Deployment).spec!.template.spec!;
    const sidecar = pod.containers.find((c) => c.name === AGENT_CONTAINER)!;
    assert.equal(sidecar.image, agent.image);
    assert.deepEqual(sidecar.args, ["--token-file", "$(TENANTRY_AGENT_TOKEN_FILE)"]);
    const env = Object.fromEntries((sidecar.env ?? []).map((e) => [e.name, e]));
    assert.deepEqual(env[AGENT_SIDECAR_ENV.podIp]?.valueFrom, { fieldRef: { fieldPath: "status.podIP" } });
    assert.equal(env[AGENT_SIDECAR_ENV.sourceUrl]?.value, "http://$(TENANTRY_POD_IP):8888/r/abc/api/status");
    assert.equal(env[AGENT_SIDECAR_ENV.sourceField]?.value, "last_activity");
    assert.deepEqual(env[AGENT_SIDECAR_ENV.sourceToken]?.valueFrom, {
      secretKeyRef: { name: "echo-main-token", key: "token" },
    });
    assert.equal(env[AGENT_SIDECAR_ENV.reportUrl]?.value, agent.reportUrl);
    assert.equal(env[AGENT_SIDECAR_ENV.periodSeconds]?.value, "30");
    // Like every container of the pod, it has the agent's token and stop URL.
    assert.equal(env[AGENT_ENV.stopUrl]?.value, context.stopUrl);
    assert.ok(sidecar.volumeMounts?.some((m) => m.name === "tenantry-agent"));
  });

  it("runs as the runtime's own user when it names one, without privileges", () => {
    const named = deployment();
    (named.spec.template.spec.containers[0] as { securityContext?: unknown }).securityContext = {
      runAsUser: 1000,
      runAsGroup: 100,
    };
    const manifest = buildManifest({ yaml: yamlOf(named) }, { ...context, agent: { ...agent, spec: {} } });
    const pod = (manifest.objects[0] as V1Deployment).spec!.template.spec!;
    const sidecar = pod.containers.find((c) => c.name === AGENT_CONTAINER)!;
    assert.deepEqual(sidecar.securityContext, {
      runAsUser: 1000,
      runAsGroup: 100,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    const unnamed = buildManifest(
      { yaml: yamlOf(deployment()) },
      { ...context, agent: { ...agent, spec: {} } },
    );
    const plain = (unnamed.objects[0] as V1Deployment).spec!.template.spec!.containers.find(
      (c) => c.name === AGENT_CONTAINER,
    )!;
    assert.equal(plain.securityContext?.runAsUser, undefined);
  });

  it("is refused naming the setting when no container has the token's variable", () => {
    assert.throws(
      () => buildManifest({ yaml: yamlOf(deployment()) }, { ...context, agent }),
      (err: unknown) => err instanceof ManifestError && err.field === "agent.activity.tokenFromEnv",
    );
  });

  it("keeps its name: a plugin's container of that name is refused", () => {
    const clash = deployment();
    clash.spec.template.spec.containers.push({ name: AGENT_CONTAINER, image: "x:1", ports: [] } as never);
    assert.throws(
      () => buildManifest({ yaml: yamlOf(clash) }, { ...context, agent: { ...agent, spec: {} } }),
      /tenantry-agent is tenantry's/,
    );
  });

  it("is not there unless the service asks for it", () => {
    const manifest = buildManifest({ yaml: yamlOf(withToken) }, context);
    const pod = (manifest.objects[0] as V1Deployment).spec!.template.spec!;
    assert.deepEqual(
      pod.containers.map((c) => c.name),
      ["echo"],
    );
  });
});

describe("a single-user server's manifest", () => {
  const server = {
    user: "alice",
    server: "main",
    prefix: "/r/abc/",
    apiUrl: "http://127.0.0.1:9000/hub/api",
    secretName: "echo-main-jupyterhub",
  };
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "echo-main-jupyterhub", namespace: context.namespace },
    data: { token: "dGhlLXRva2Vu" },
  };
  const built = (yaml: string) =>
    buildManifest({ yaml, endpoint: { port: 8080 } }, { ...context, singleUser: { server, secret } });

  it("gives the first container KubeSpawner's environment and adds the token Secret, labelled as the runtime's", () => {
    const manifest = built(yamlOf(deployment()));
    const kept = manifest.objects.find((o) => o.kind === "Secret")!;
    assert.equal(kept.metadata?.labels?.[RUNTIME_LABEL], "echo-main");
    const workload = manifest.objects.find((o) => o.kind === "Deployment") as V1Deployment;
    const env = workload.spec!.template.spec!.containers[0]!.env!;
    const token = env.find((e) => e.name === "JUPYTERHUB_API_TOKEN")!;
    assert.deepEqual(token.valueFrom, { secretKeyRef: { name: "echo-main-jupyterhub", key: "token" } });
    assert.equal(env.find((e) => e.name === "JUPYTERHUB_SERVICE_URL")?.value, "http://0.0.0.0:8080/r/abc/");
  });

  it("refuses a plugin Secret of the token Secret's name", () => {
    assert.throws(
      () =>
        built(
          yamlOf(deployment(), {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: "echo-main-jupyterhub" },
          }),
        ),
      /tenantry's/,
    );
  });
});
