import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Informer, type ListResult, type ListWatchSource, ManualClock } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import { BY_USER } from "../informers.js";
import { shareScopes } from "./shares.js";

function runtime(user: string, instance: string, access?: { users?: string[]; groups?: string[] }): Runtime {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Runtime",
    metadata: { namespace: "ns", name: `${user}-${instance}`, resourceVersion: "1" },
    spec: { user, tenant: "t", service: "jupyter", instance, ...(access ? { access } : {}) },
  } as Runtime;
}

/** An informer holding `runtimes`, synced. */
async function informerOf(runtimes: Runtime[]): Promise<Informer<Runtime>> {
  const source: ListWatchSource<Runtime> = {
    cluster: "home",
    description: "runtimes given in the test",
    list: async (): Promise<ListResult<Runtime>> => ({ items: runtimes, resourceVersion: "1" }),
    watch: () => ({ abort: () => {} }),
  };
  const informer = new Informer(source, { clock: new ManualClock() });
  informer.addIndex(BY_USER, (r) => [r.spec.user]);
  informer.start();
  await informer.waitForSync();
  return informer;
}

describe("spec.access as JupyterHub's shares", () => {
  test("a user named, or a member of a group named, holds access:servers on that server only", async () => {
    const informer = await informerOf([
      runtime("alice", "lab", { users: ["bob"] }),
      runtime("alice", "default"),
      runtime("carol", "notebook", { groups: ["team"] }),
      runtime("dave", "lab", { users: ["bob"], groups: ["team"] }),
    ]);
    assert.deepEqual(shareScopes(informer, "bob", []).sort(), [
      "access:servers!server=alice/lab",
      "access:servers!server=dave/lab",
    ]);
    assert.deepEqual(shareScopes(informer, "erin", ["team"]).sort(), [
      "access:servers!server=carol/notebook",
      "access:servers!server=dave/lab",
    ]);
    // Nobody else holds anything; the default server's name is "" as in JupyterHub.
    assert.deepEqual(shareScopes(informer, "mallory", ["others"]), []);
    informer.stop();
  });
});
