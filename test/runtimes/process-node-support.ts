/**
 * Runtimes for real on the home cluster's process node, for the tests that need running ones:
 * a user of tenantry's identity service in a tenant of their own, RuntimeServices placed on the
 * process node, starts and stops through the Admin API, and everything removed afterwards.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import {
  type Runtime,
  type RuntimeService,
  type RuntimeServiceSpec,
  runtimePlacement,
} from "../../src/runtimes/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import {
  RUNTIMES_API as API,
  adminCall,
  clusterClient,
  type Reply,
  removeObject,
} from "../support/runtimes.js";

export const JUPYTER_PLUGIN = join(
  import.meta.dirname,
  "..",
  "..",
  "examples",
  "runtime-plugins",
  "jupyter",
  "plugin.ts",
);

/** The example Jupyter plugin as an executable, its runtimes on the process node. */
export function jupyterServiceSpec(extra: Partial<RuntimeServiceSpec> = {}): RuntimeServiceSpec {
  return {
    plugin: {
      exec: {
        command: [process.execPath, "--import", "tsx", JUPYTER_PLUGIN, "--image", LOCAL_IMAGES.jupyter],
        timeoutSeconds: 60,
      },
    },
    defaults: { volumeSize: "256Mi" },
    pods: PROCESS_NODE_PLACEMENT,
    // The first Jupyter runtime of a machine installs its environment: its image pull.
    startTimeoutSeconds: 900,
    ...extra,
  } as RuntimeServiceSpec;
}

/** The generic plugin's echo server on the process node. */
export function echoServiceSpec(extra: Partial<RuntimeServiceSpec> = {}): RuntimeServiceSpec {
  return {
    plugin: { builtin: "generic" },
    defaults: { image: LOCAL_IMAGES.echo, port: 8080 },
    pods: PROCESS_NODE_PLACEMENT,
    ...extra,
  } as RuntimeServiceSpec;
}

export interface TestUser {
  name: string;
  tenant: string;
  password: string;
  token: string;
}

export class ProcessNodeRuntimes {
  readonly home = clusterClient();
  private identity?: BuiltinIdentity;
  private readonly users: TestUser[] = [];
  private readonly services: string[] = [];

  /** A user of the built-in identity service, in a tenant of its own unless one is named. */
  async user(prefix: string, tenant = uniqueName(`${prefix}t`)): Promise<TestUser> {
    this.identity ??= await sharedBuiltinIdentity();
    const name = uniqueName(prefix);
    const password = `${prefix}-secret-password-1`;
    await this.identity.createUser({ name, password, tenant, tenantAdmin: false });
    const { token } = await this.identity.login({ username: name, password });
    const user = { name, tenant, password, token };
    this.users.push(user);
    return user;
  }

  /** Registers a RuntimeService and waits for it to be Ready; its name. */
  async service(
    prefix: string,
    spec: RuntimeServiceSpec,
    annotations?: Record<string, string>,
  ): Promise<string> {
    const name = uniqueName(prefix);
    const object = {
      apiVersion: API,
      kind: "RuntimeService",
      metadata: { name, ...(annotations ? { annotations } : {}) },
      spec,
    } as KubernetesObject;
    await this.home.objects.create(object);
    this.services.push(name);
    await eventually(async () => {
      const service = (await this.home.objects.read(object as never)) as RuntimeService;
      assert.equal(service.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    });
    return name;
  }

  path(user: TestUser, service: string, instance: string): string {
    return `/services/${user.name}/${service}/${instance}`;
  }

  placed(user: TestUser, service: string, instance: string) {
    return runtimePlacement({ tenant: user.tenant, user: user.name, service, instance });
  }

  read(user: TestUser, service: string, instance: string): Promise<Runtime> {
    return this.home.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: this.placed(user, service, instance),
    }) as Promise<Runtime>;
  }

  /** Starts (or resumes) and waits until GET answers 200; the answer. */
  async start(
    user: TestUser,
    service: string,
    instance: string,
    {
      timeoutMs = 180_000,
      query = "",
      body = {},
    }: { timeoutMs?: number; query?: string; body?: object } = {},
  ): Promise<Reply> {
    const posted = await adminCall("POST", `${this.path(user, service, instance)}${query}`, user.token, body);
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    return eventually(
      async () => {
        const r = await adminCall("GET", this.path(user, service, instance), user.token);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r;
      },
      { timeoutMs, intervalMs: 500 },
    );
  }

  async cleanUp(): Promise<void> {
    for (const service of this.services) {
      for (const runtime of (await this.home.objects.list(API, "Runtime")).items as Runtime[]) {
        if (runtime.spec.service === service) await removeObject(this.home, runtime);
      }
      await removeObject(this.home, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
    }
    for (const user of this.users) {
      const namespace = runtimePlacement({
        tenant: user.tenant,
        user: user.name,
        service: "x",
        instance: "x",
      }).namespace;
      await removeObject(this.home, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
      await removeObject(this.home, { apiVersion: API, kind: "Tenant", metadata: { name: user.tenant } });
      await this.identity?.deleteUser(user.name).catch(() => {});
    }
    if (this.identity) await stopSharedBuiltinIdentity();
  }
}
