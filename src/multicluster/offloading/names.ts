/** The name of a namespace's replicas in the providers (Liqo thesis, table 4.1). */
import type { NamespaceOffloadingSpec } from "../api/offloading.js";

/** Namespace names are DNS labels: at most 63 characters. */
export const MAX_NAMESPACE_NAME = 63;

export type RemoteName = { name: string; error?: undefined } | { name?: undefined; error: string };

export function remoteNamespaceName(
  spec: NamespaceOffloadingSpec,
  localNamespace: string,
  localClusterId: string,
): RemoteName {
  switch (spec.namespaceMappingStrategy ?? "DefaultName") {
    case "EnforceSameName":
      return { name: localNamespace };
    case "SelectedName":
      return spec.remoteNamespaceName
        ? { name: spec.remoteNamespaceName }
        : { error: "namespaceMappingStrategy SelectedName needs spec.remoteNamespaceName" };
    default: {
      const name = `${localNamespace}-${localClusterId}`;
      if (name.length <= MAX_NAMESPACE_NAME) return { name };
      const room = MAX_NAMESPACE_NAME - localClusterId.length - 1;
      return {
        error: `namespaceMappingStrategy DefaultName would name the remote namespaces "${name}" (${name.length} characters, more than ${MAX_NAMESPACE_NAME}): the local namespace name may have at most ${room} characters with DefaultName; use EnforceSameName or SelectedName`,
      };
    }
  }
}
