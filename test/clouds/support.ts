/** Calling the logical-clouds API of the tenantry serving the home cluster, and waiting on its logical clouds. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import { labelCluster } from "../../src/clusters/index.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import { testEnvironment, testKubeConfig } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

export { exists } from "../multicluster/support.js";

export interface Credentials {
  cert?: string;
  key?: string;
  token?: string;
}

export interface ApiAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test answers are read field by field
  body: any;
}

function credentialsOf(kc: KubeConfig): Credentials {
  const user = kc.getCurrentUser()!;
  const read = (data?: string, file?: string) =>
    data ? Buffer.from(data, "base64").toString() : file ? readFileSync(file, "utf8") : undefined;
  return { cert: read(user.certData, user.certFile)!, key: read(user.keyData, user.keyFile)! };
}

/** The home cluster's administrator (system:masters), by client certificate as DCM's `curl --cert --key`. */
export const admin = (): Credentials => credentialsOf(testKubeConfig("home"));
export const asUser = (kc: KubeConfig): Credentials => credentialsOf(kc);

export function cloudsApi(
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; contentType?: string; as?: Credentials | null } = {},
): Promise<ApiAnswer> {
  const env = testEnvironment();
  const url = env.tenantry.logicalCloudsUrl;
  if (!url) throw new Error("the test environment names no logical-clouds API");
  const as = options.as === undefined ? admin() : options.as;
  const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method,
        ca: env.tenantry.logicalCloudsCaPem,
        ...(as?.cert ? { cert: as.cert, key: as.key } : {}),
        headers: {
          ...(payload !== undefined ? { "content-type": options.contentType ?? "application/json" } : {}),
          ...(as?.token ? { authorization: `Bearer ${as.token}` } : {}),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => {
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {}
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

export const home = (): ClusterClient => {
  const entry = testEnvironment().clusters.find((c) => c.name === "home")!;
  return loadClusterClient("home", entry.kubeconfig);
};

export const cloudPath = (project: string, cloud: string) =>
  `/v2/projects/${project}/logical-clouds/${cloud}`;

/** Waits for a logical cloud's status answer to satisfy `check`; returns it. */
export function statusBecomes(
  project: string,
  cloud: string,
  check: (status: ApiAnswer["body"]) => void,
  timeoutMs = 90_000,
): Promise<ApiAnswer["body"]> {
  return eventually(
    async () => {
      const answer = await cloudsApi(
        "GET",
        `${cloudPath(project, cloud)}/status?status=deployed&output=detail`,
      );
      assert.equal(answer.status, 200, answer.text);
      check(answer.body);
      return answer.body;
    },
    { timeoutMs, intervalMs: 250 },
  );
}

/** A project with a level-1 logical cloud whose user may do anything in its namespace. */
export async function createCloud(
  project: string,
  cloud: string,
  options: {
    namespace?: string;
    users?: string[];
    references?: unknown[];
    level?: "0" | "1";
    extra?: Record<string, unknown>;
  } = {},
): Promise<void> {
  const created = await cloudsApi("POST", "/v2/projects", { body: { metadata: { name: project } } });
  assert.ok(created.status === 201 || created.status === 409, created.text);
  const namespace = options.namespace ?? cloud;
  const [first, ...more] = options.users ?? ["user-1"];
  const level = options.level ?? "1";
  const body =
    level === "0"
      ? { metadata: { name: cloud }, spec: { level: "0" } }
      : {
          metadata: { name: cloud },
          spec: {
            namespace,
            level: "1",
            user: { userName: first, type: "certificate" },
            ...(more.length ? { users: more.map((u) => ({ userName: u })) } : {}),
            ...options.extra,
          },
        };
  const made = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, { body });
  assert.equal(made.status, 201, made.text);
  for (const reference of options.references ?? []) {
    const added = await cloudsApi("POST", `${cloudPath(project, cloud)}/cluster-references`, {
      body: reference,
    });
    assert.equal(added.status, 201, added.text);
  }
  if (level === "1") {
    const permission = await cloudsApi("POST", `${cloudPath(project, cloud)}/user-permissions`, {
      body: {
        metadata: { name: "all" },
        spec: { namespace, apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
      },
    });
    assert.equal(permission.status, 201, permission.text);
  }
}

/** Terminates (when instantiated) and deletes every cloud of a project, then the project, waiting for each. */
export async function removeProject(project: string, _clouds: string[] = []): Promise<void> {
  const listed = await cloudsApi("GET", `/v2/projects/${project}/logical-clouds`);
  const clouds =
    listed.status === 200 ? listed.body.map((c: { metadata: { name: string } }) => c.metadata.name) : [];
  await Promise.all(
    clouds.map(async (cloud: string) => {
      const terminate = await cloudsApi("POST", `${cloudPath(project, cloud)}/terminate`);
      if (terminate.status === 202) {
        await statusBecomes(
          project,
          cloud,
          (s) => assert.equal(s.deployedStatus, "Terminated", JSON.stringify(s)),
          120_000,
        ).catch(() => {});
      }
      await cloudsApi("DELETE", cloudPath(project, cloud));
    }),
  );
  await eventually(
    async () => {
      const left = await cloudsApi("GET", `/v2/projects/${project}/logical-clouds`);
      assert.ok(left.status === 404 || left.body.length === 0, left.text);
    },
    { timeoutMs: 120_000 },
  ).catch(() => {});
  await cloudsApi("DELETE", `/v2/projects/${project}`);
}

/** Sets (value) or removes (null) a label of a registered cluster. */
export async function setClusterLabel(cluster: string, key: string, value: string | null): Promise<void> {
  await labelCluster(home(), cluster, value === null ? { remove: [key] } : { set: { [key]: value } });
}
