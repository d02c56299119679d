/**
 * The one-line summaries in status that `kubectl get` prints (a printer column can only show a
 * field, not compute one).
 */
import type { ResourceList } from "../../apis/index.js";
import { parseQuantity } from "../../common/index.js";
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

/** Resources shown in a usage summary; `tenantry tenant usage` lists them all. */
const SUMMARY_ENTRIES = 3;
/** From this share of its limit on, a resource is shown with its used/hard, not only its share. */
const NEAR_LIMIT_PERCENT = 80;

/**
 * used/hard in percent (two decimals); undefined when unreadable. A zero limit (a resource
 * forbidden, such as NodePort Services) is 0% while unused and 100% once anything uses it.
 */
function percentOf(used: string | number | undefined, hard: string | number): number | undefined {
  try {
    const limit = parseQuantity(hard);
    const amount = parseQuantity(used ?? 0);
    if (limit <= 0n) return amount > 0n ? 100 : 0;
    return Number((amount * 10_000n) / limit) / 100;
  } catch {
    return undefined;
  }
}

/**
 * What matters in a quota at a glance, on one short line: the most used resources as shares of
 * their limits (used/hard as well once near the limit), then how many more there are —
 * `pods 95% (19/20), requests.cpu 40%, limits.memory 12%, +12 more`; `none used of 15 limits`;
 * `-` when nothing is limited.
 */
export function formatUsageSummary(hard: ResourceList | undefined, used: ResourceList | undefined): string {
  const names = Object.keys(hard ?? {});
  if (names.length === 0) return "-";
  const rows = names
    .map((name) => ({ name, percent: percentOf(used?.[name], hard![name]!) }))
    .sort((a, b) => (b.percent ?? -1) - (a.percent ?? -1) || a.name.localeCompare(b.name));
  const plural = names.length === 1 ? "limit" : "limits";
  if (rows.every((r) => r.percent === 0)) return `none used of ${names.length} ${plural}`;
  const shown = rows.slice(0, SUMMARY_ENTRIES).map(({ name, percent }) => {
    if (percent === undefined) return `${name} ${used?.[name] ?? 0}/${hard![name]}`;
    const share = percent > 0 && percent < 1 ? "<1%" : `${Math.floor(percent)}%`;
    return percent >= NEAR_LIMIT_PERCENT
      ? `${name} ${share} (${used?.[name] ?? 0}/${hard![name]})`
      : `${name} ${share}`;
  });
  const more = names.length - shown.length;
  return [...shown, ...(more > 0 ? [`+${more} more`] : [])].join(", ");
}
