/**
 * The one-line summaries in status that `kubectl get` prints (a printer column can only show a
 * field, not compute one).
 */
import type { ResourceList } from "../../apis/index.js";
import type { TenantOwner } from "./tenant.js";

/** `User/alice, Group/devs, ServiceAccount/ci/deployer`. */
export function formatOwnerSummary(owners: readonly TenantOwner[]): string {
  return owners
    .map((owner) => {
      const serviceAccount = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(owner.name);
      const name =
        owner.kind === "ServiceAccount" && serviceAccount
          ? `${serviceAccount[1]}/${serviceAccount[2]}`
          : owner.name;
      return `${owner.kind}/${name}`;
    })
    .join(", ");
}

/** `cpu: 1/4, pods: 3/20`, one entry per limited resource in name order; `-` when nothing is limited. */
export function formatUsageSummary(hard: ResourceList | undefined, used: ResourceList | undefined): string {
  const names = Object.keys(hard ?? {}).sort();
  if (names.length === 0) return "-";
  return names.map((name) => `${name}: ${used?.[name] ?? 0}/${hard?.[name]}`).join(", ");
}
