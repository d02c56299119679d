import assert from "node:assert/strict";
import type { ClusterClient, Condition } from "../../src/kube/index.js";
import { isTrue } from "../../src/kube/index.js";
import { eventually } from "./eventually.js";

/**
 * Creates a throwaway namespaced CRD `widgets.<group>` (v1, status subresource, free-form spec
 * and status) and waits until it is Established. Returns a function that deletes it.
 */
export async function createWidgetCrd(client: ClusterClient, group: string): Promise<() => Promise<unknown>> {
  const crdName = `widgets.${group}`;
  await client.apiextensions.createCustomResourceDefinition({
    body: {
      metadata: { name: crdName },
      spec: {
        group,
        scope: "Namespaced",
        names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: { type: "object", x_kubernetes_preserve_unknown_fields: true },
                  status: { type: "object", x_kubernetes_preserve_unknown_fields: true },
                },
              },
            },
          },
        ],
      },
    },
  });
  await eventually(
    async () => {
      const crd = await client.apiextensions.readCustomResourceDefinition({ name: crdName });
      assert.ok(isTrue(crd.status?.conditions as Condition[] | undefined, "Established"), "CRD established");
    },
    { timeoutMs: 20_000 },
  );
  return () => client.apiextensions.deleteCustomResourceDefinition({ name: crdName });
}
