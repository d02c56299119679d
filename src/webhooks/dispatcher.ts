/**
 * One admission entry each way for what tenantry admits. Capabilities register checks; the
 * dispatcher groups them into one mutating and one validating entry per scope (objects in tenant
 * namespaces, cluster-scoped objects), decodes each request once, runs the matching checks in their
 * declared order, and answers once. Adding a check never adds an HTTPS call from kube-apiserver.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { V1LabelSelector, V1RuleWithOperations } from "@kubernetes/client-node";
import jsonPatch, { type Operation } from "fast-json-patch";
import type { Logger } from "pino";
import { NOT_NAMESPACE_BOOTSTRAP } from "./configuration.js";
import type { AdmissionDecision, AdmissionRequest, JsonPatchOperation } from "./review.js";
import type { AdmissionWebhook } from "./server.js";

// A CommonJS module: its functions come with its default export only.
const { applyPatch, compare } = jsonPatch;

/**
 * A capability's admission rule. It has the fields of an entry of its own (used when it keeps one,
 * see {@link admissionEntries}); inside a shared entry its rules, objectSelector and `matches` are
 * evaluated here instead of in kube-apiserver.
 */
export interface AdmissionCheck extends AdmissionWebhook {
  /**
   * In-process stand-in for `matchConditions` when the check runs inside a shared entry (a CEL
   * condition of one check cannot narrow an entry that others share).
   */
  matches?(request: AdmissionRequest): boolean;
  /**
   * Why the check keeps an entry of its own: one that ordinary requests never match (bootstrap
   * CSRs, cordoned tenants' namespaces), so it costs them no call.
   */
  ownEntry?: string;
  /** Writes a reservation: runs after every other validator of the request allowed it. */
  reserves?: boolean;
}

export interface AdmissionEntriesOptions {
  /** The label every tenant namespace carries: the shared namespaced entry selects on it. */
  tenantLabel: string;
  logger?: Logger;
}

/** What the checks of the request being dispatched looked up, by key. */
const requestScope = new AsyncLocalStorage<Map<string, Promise<unknown>>>();

/**
 * Looks something up once for every check of the request being dispatched (its namespace's tenant,
 * the tenant): the first check's lookup, cache miss and API read included, is every later one's.
 * Outside a dispatched request it simply looks up. Keys name what is looked up, e.g.
 * {@link tenantOfNamespaceKey}.
 */
export function oncePerRequest<T>(key: string, lookup: () => Promise<T>): Promise<T> {
  const memo = requestScope.getStore();
  if (!memo) return lookup();
  let found = memo.get(key) as Promise<T> | undefined;
  if (!found) {
    found = lookup();
    memo.set(key, found);
  }
  return found;
}

/** The key of a namespace's tenant name (its tenant label), shared by every capability's checks. */
export const tenantOfNamespaceKey = (namespace: string) => `namespace/${namespace}/tenant`;

/** The key of a tenant by name. */
export const tenantKey = (name: string) => `tenant/${name}`;

/** Names and paths of the shared entries. */
export const SHARED_ENTRIES = {
  namespaced: { name: "tenant-namespaces.admission.tenantry.dev", path: "tenant-namespaces" },
  cluster: { name: "cluster.admission.tenantry.dev", path: "cluster" },
} as const;

type Scope = keyof typeof SHARED_ENTRIES;

/**
 * The entries kube-apiserver calls for a set of checks:
 * - per kind, one shared entry for objects in tenant namespaces and one for cluster-scoped objects;
 * - a check reaching namespaces outside the tenants' keeps an entry of its own for those only
 *   (its selector and "no tenant label"), disjoint from the shared one;
 * - checks for everywhere, with an objectSelector (updates of labelled objects only) or marked
 *   `ownEntry` keep their own entries: no pod creation in a tenant namespace matches them.
 */
export function admissionEntries(
  checks: AdmissionCheck[],
  options: AdmissionEntriesOptions,
): AdmissionWebhook[] {
  const own: AdmissionWebhook[] = [];
  const shared = new Map<string, { kind: AdmissionCheck["kind"]; scope: Scope; members: AdmissionCheck[] }>();
  for (const check of checks) {
    const scope = scopeOf(check);
    if (check.everywhere || check.ownEntry || check.objectSelector || !scope) {
      own.push(check);
      continue;
    }
    const unmatched = (check.matchConditions ?? []).filter((c) => c.name !== NOT_NAMESPACE_BOOTSTRAP.name);
    if (unmatched.length && !check.matches)
      throw new Error(`admission check ${check.name}: matchConditions in a shared entry need matches()`);
    if (scope === "namespaced" && !withinTenants(check.namespaceSelector, options.tenantLabel))
      own.push(outsideTenants(check, options.tenantLabel));
    const key = `${check.kind}/${scope}`;
    const group = shared.get(key) ?? { kind: check.kind, scope, members: [] };
    group.members.push(check);
    shared.set(key, group);
  }
  const entries = [...shared.values()].map(({ kind, scope, members }) =>
    sharedEntry(kind, scope, members, options),
  );
  return [...entries, ...own];
}

function scopeOf(check: AdmissionCheck): Scope | undefined {
  const scopes = new Set(check.rules.map((r) => r.scope));
  if (scopes.size !== 1) return undefined;
  return scopes.has("Namespaced") ? "namespaced" : scopes.has("Cluster") ? "cluster" : undefined;
}

function withinTenants(selector: V1LabelSelector | undefined, tenantLabel: string): boolean {
  return Boolean(
    selector?.matchLabels?.[tenantLabel] !== undefined ||
      selector?.matchExpressions?.some(
        (e) => e.key === tenantLabel && (e.operator === "Exists" || e.operator === "In"),
      ),
  );
}

/** The check's own entry for namespaces that are no tenant's (the shared entry has the others). */
function outsideTenants(check: AdmissionCheck, tenantLabel: string): AdmissionWebhook {
  const selector = check.namespaceSelector ?? {};
  return {
    ...check,
    namespaceSelector: {
      ...selector,
      matchExpressions: [
        ...(selector.matchExpressions ?? []),
        { key: tenantLabel, operator: "DoesNotExist" },
      ],
    },
  };
}

function sharedEntry(
  kind: AdmissionCheck["kind"],
  scope: Scope,
  members: AdmissionCheck[],
  options: AdmissionEntriesOptions,
): AdmissionWebhook {
  const { name, path } = SHARED_ENTRIES[scope];
  const run = kind === "mutating" ? mutate : validate;
  return {
    name,
    kind,
    path: `/${kind === "mutating" ? "mutate" : "validate"}/${path}`,
    rules: members.flatMap((m) => m.rules) as V1RuleWithOperations[],
    // Fail when any member fails closed; a member that ignores failures is skipped on error here.
    failurePolicy: members.some((m) => m.failurePolicy === "Fail") ? "Fail" : "Ignore",
    ...(scope === "namespaced"
      ? {
          namespaceSelector: { matchExpressions: [{ key: options.tenantLabel, operator: "Exists" }] },
          // What kube-controller-manager puts into every new namespace concerns none of the shared
          // checks but owner labels and quota, which leave it to their controllers.
          matchConditions: [NOT_NAMESPACE_BOOTSTRAP],
        }
      : {}),
    timeoutSeconds: Math.max(...members.map((m) => m.timeoutSeconds ?? 5)),
    sideEffects: members.some((m) => m.sideEffects === "NoneOnDryRun") ? "NoneOnDryRun" : "None",
    // The mutators ran in turn on one object: nothing is left for a second call to do.
    reinvocationPolicy: "Never",
    handle: (request) =>
      requestScope.run(new Map(), () =>
        run(
          members.filter((m) => checkMatches(m, request)),
          request,
          options.logger,
        ),
      ),
  };
}

/** Whether a check's rules, objectSelector and `matches` take this request. */
export function checkMatches(check: AdmissionCheck, request: AdmissionRequest): boolean {
  if (!check.rules.some((rule) => ruleMatches(rule, request))) return false;
  if (check.objectSelector && !selects(check.objectSelector, request)) return false;
  return check.matches?.(request) ?? true;
}

/** As kube-apiserver matches a rule (versions aside: entries match with policy Equivalent). */
export function ruleMatches(rule: V1RuleWithOperations, request: AdmissionRequest): boolean {
  const operations = rule.operations ?? [];
  if (!operations.includes("*") && !operations.includes(request.operation)) return false;
  const groups = rule.apiGroups ?? [];
  if (!groups.includes("*") && !groups.includes(request.resource.group)) return false;
  const subresource = request.subResource ?? "";
  return (rule.resources ?? []).some((pattern) => {
    const [resource, sub] = pattern.split("/", 2) as [string, string | undefined];
    if (resource !== "*" && resource !== request.resource.resource) return false;
    if (sub === undefined) return subresource === "";
    return sub === "*" || sub === subresource;
  });
}

type Labelled = { metadata?: { labels?: Record<string, string> } } | undefined;

/** An objectSelector takes a request when the object or the old object matches it. */
function selects(selector: V1LabelSelector, request: AdmissionRequest): boolean {
  return [request.object, request.oldObject].some(
    (object) => object !== undefined && labelsMatch(selector, (object as Labelled)?.metadata?.labels ?? {}),
  );
}

export function labelsMatch(selector: V1LabelSelector, labels: Record<string, string>): boolean {
  const exact = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    exact &&
    (selector.matchExpressions ?? []).every((e) => {
      const has = e.key in labels;
      switch (e.operator) {
        case "Exists":
          return has;
        case "DoesNotExist":
          return !has;
        case "In":
          return has && (e.values ?? []).includes(labels[e.key]!);
        case "NotIn":
          return !has || !(e.values ?? []).includes(labels[e.key]!);
        default:
          return false;
      }
    })
  );
}

/** The check's short name, which starts a refusal: `pod-safety: spec.containers[0]…`. */
export function checkLabel(check: Pick<AdmissionCheck, "name">): string {
  return check.name.split(".")[0]!;
}

/** Runs one check; an error of a check that ignores failures counts as no opinion. */
async function decide(
  check: AdmissionCheck,
  request: AdmissionRequest,
  logger: Logger | undefined,
): Promise<AdmissionDecision | undefined> {
  try {
    return await check.handle(request);
  } catch (err) {
    if (check.failurePolicy !== "Ignore") throw err;
    logger?.warn({ err, check: check.name, uid: request.uid }, "admission check failed; ignored");
    return undefined;
  }
}

function refusal(check: AdmissionCheck, decision: AdmissionDecision & { allowed: false }): AdmissionDecision {
  return { ...decision, message: `${checkLabel(check)}: ${decision.message}` };
}

/**
 * Mutators change one object in turn, each seeing what those before it did; one JSON patch from
 * the request's object to the result is the answer.
 */
async function mutate(
  checks: AdmissionCheck[],
  request: AdmissionRequest,
  logger: Logger | undefined,
): Promise<AdmissionDecision> {
  let object = request.object;
  const warnings: string[] = [];
  for (const check of checks) {
    const decision = await decide(check, { ...request, ...(object ? { object } : {}) }, logger);
    if (!decision) continue;
    if (!decision.allowed) return refusal(check, decision);
    warnings.push(...(decision.warnings ?? []));
    if (decision.patch?.length && object)
      object = applyPatch(object, decision.patch as Operation[], false, false).newDocument;
  }
  const patch = request.object && object ? (compare(request.object, object) as JsonPatchOperation[]) : [];
  return {
    allowed: true,
    ...(patch.length ? { patch } : {}),
    ...(warnings.length ? { warnings } : {}),
  };
}

/**
 * Every validator runs; those that write a reservation run last, one after another, and only for a
 * request all the others allowed — a refused request never holds a reservation.
 */
async function validate(
  checks: AdmissionCheck[],
  request: AdmissionRequest,
  logger: Logger | undefined,
): Promise<AdmissionDecision> {
  const judging = checks.filter((c) => !c.reserves);
  const decisions = await Promise.all(judging.map((c) => decide(c, request, logger)));
  const refusals: { check: AdmissionCheck; decision: AdmissionDecision & { allowed: false } }[] = [];
  const warnings: string[] = [];
  decisions.forEach((decision, i) => {
    if (decision && !decision.allowed) refusals.push({ check: judging[i]!, decision });
    else if (decision?.warnings) warnings.push(...decision.warnings);
  });
  if (refusals.length) {
    const [first] = refusals;
    const message = refusals
      .map(({ check, decision }) => `${checkLabel(check)}: ${decision.message}`)
      .join("; ");
    return { ...first!.decision, message };
  }
  for (const check of checks.filter((c) => c.reserves)) {
    const decision = await decide(check, request, logger);
    if (decision && !decision.allowed) return refusal(check, decision);
    warnings.push(...(decision?.warnings ?? []));
  }
  return warnings.length ? { allowed: true, warnings } : { allowed: true };
}
