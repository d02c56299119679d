import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import { EXEMPT_NAMESPACES } from "../../webhooks/index.js";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import type { Tenant } from "../api/tenant.js";
import {
  NAMESPACE_ISOLATION,
  NAMESPACE_ORIGIN_LABEL,
  NETWORK_ISOLATION_LABEL,
  RUNTIME_USER_ANNOTATION,
} from "./labels.js";
import { declaredNamespaceName, namespaceContents, namespaceObject } from "./render.js";

/** Objects rendered from templates, remembered on the namespace so that removed ones are deleted. */
export const TEMPLATE_OBJECTS_ANNOTATION = "tenantry.dev/template-objects";

/** Never part of a tenant: the cluster's own namespaces and tenantry's. */
export const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set([
  ...EXEMPT_NAMESPACES,
  "default",
  "tenantry-system",
]);

export function objectId(o: KubernetesObject): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata?.name}`;
}

/** What one namespace of a tenant should look like: the Namespace object and everything inside it. */
export interface NamespacePlan {
  name: string;
  origin: "declared" | "owner";
  namespace: V1Namespace;
  contents: KubernetesObject[];
}

/** The tenant's declared namespaces by full name (`<tenant>-<name>`). */
export function declaredNamespaces(tenant: Tenant) {
  return new Map(
    (tenant.spec.namespaces ?? []).map((ns) => [declaredNamespaceName(tenant.metadata!.name!, ns.name), ns]),
  );
}

/**
 * The plan for namespace `name` of `tenant`, or undefined when the tenant does not keep it: a
 * system namespace (the webhooks exempt those, so a tenant label there was never checked, and
 * binding owners as admin there would hand over the cluster), or a declared namespace the spec
 * dropped (it is being deleted). Throws TemplateError when a template cannot be rendered.
 */
export function planNamespace(
  tenant: Tenant,
  name: string,
  current: V1Namespace | undefined,
  templates: Map<string, NamespaceTemplate>,
): NamespacePlan | undefined {
  if (SYSTEM_NAMESPACES.has(name)) return undefined;
  const declared = declaredNamespaces(tenant).get(name);
  if (!declared && current?.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] === "declared") return undefined;
  // Namespaces the owners created joined the tenant through admission; they stay until deleted.
  const origin = declared ? "declared" : "owner";
  const templateRefs = [...(tenant.spec.templates ?? []), ...(declared?.templates ?? [])];
  const runtimeUser = current?.metadata?.annotations?.[RUNTIME_USER_ANNOTATION];
  const contents = namespaceContents(tenant, name, templateRefs, templates, {
    isolatedAlone: current?.metadata?.labels?.[NETWORK_ISOLATION_LABEL] === NAMESPACE_ISOLATION,
    ...(runtimeUser ? { runtimeUser } : {}),
  });
  const templateIds = contents
    .filter((o) => o.metadata?.labels?.["tenantry.dev/template"])
    .map(objectId)
    .sort();
  const namespace = namespaceObject(tenant, name, origin, declared?.labels);
  namespace.metadata!.annotations = {
    [TEMPLATE_OBJECTS_ANNOTATION]: JSON.stringify(templateIds),
    // The runtimes capability's, kept as it is: whose runtimes namespace this is never changes.
    ...(runtimeUser ? { [RUNTIME_USER_ANNOTATION]: runtimeUser } : {}),
  };
  return { name, origin, namespace, contents };
}
