/**
 * Node selectors as the scheduler reads them (core/v1 NodeSelector): terms are ORed, the
 * requirements inside a term ANDed; an empty term matches nothing. Used to choose virtual nodes
 * (peered clusters) and to build the affinity of offloaded pods.
 */
import type {
  V1LabelSelector,
  V1Node,
  V1NodeSelector,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
} from "@kubernetes/client-node";

function integer(value: string | undefined): number | undefined {
  if (value === undefined || !/^-?\d+$/.test(value)) return undefined;
  return Number(value);
}

/** One requirement against a value that may be absent (a missing label). */
export function requirementMatches(
  requirement: V1NodeSelectorRequirement,
  value: string | undefined,
): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      const actual = integer(value);
      const bound = integer(values[0]);
      if (actual === undefined || bound === undefined || values.length !== 1) return false;
      return requirement.operator === "Gt" ? actual > bound : actual < bound;
    }
    default:
      return false;
  }
}

/** Whether a node matches one term; a term with no requirements matches no node (as in the scheduler). */
export function termMatches(term: V1NodeSelectorTerm, node: V1Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  return (
    expressions.every((r) => requirementMatches(r, labels[r.key])) &&
    fields.every((r) => r.key === "metadata.name" && requirementMatches(r, node.metadata?.name))
  );
}

/** Whether a node matches a selector (any term). */
export function selectorMatches(selector: V1NodeSelector, node: V1Node): boolean {
  return selector.nodeSelectorTerms.some((term) => termMatches(term, node));
}

/**
 * The intersection of two selectors: every term of `a` ANDed with every term of `b`. Pairs that can
 * never match (the same key required In disjoint sets, or In and DoesNotExist) are left out.
 */
export function intersectSelectors(a: V1NodeSelector, b: V1NodeSelector): V1NodeSelector {
  const terms: V1NodeSelectorTerm[] = [];
  for (const left of a.nodeSelectorTerms) {
    for (const right of b.nodeSelectorTerms) {
      const term = andTerms(left, right);
      if (term) terms.push(term);
    }
  }
  return { nodeSelectorTerms: terms };
}

/** Two terms ANDed; undefined when they obviously contradict each other. */
export function andTerms(
  left: V1NodeSelectorTerm,
  right: V1NodeSelectorTerm,
): V1NodeSelectorTerm | undefined {
  const expressions = [...(left.matchExpressions ?? []), ...(right.matchExpressions ?? [])];
  const fields = [...(left.matchFields ?? []), ...(right.matchFields ?? [])];
  if (contradicts(expressions) || contradicts(fields)) return undefined;
  return {
    ...(expressions.length ? { matchExpressions: dedupe(expressions) } : {}),
    ...(fields.length ? { matchFields: dedupe(fields) } : {}),
  };
}

function dedupe(requirements: V1NodeSelectorRequirement[]): V1NodeSelectorRequirement[] {
  const seen = new Set<string>();
  return requirements.filter((r) => {
    const key = JSON.stringify([r.key, r.operator, [...(r.values ?? [])].sort()]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Same key: In sets with no common value, In against DoesNotExist, or In values all excluded by NotIn. */
function contradicts(requirements: V1NodeSelectorRequirement[]): boolean {
  const byKey = new Map<string, V1NodeSelectorRequirement[]>();
  for (const r of requirements) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  for (const group of byKey.values()) {
    let allowed: Set<string> | undefined;
    for (const r of group) {
      if (r.operator !== "In") continue;
      const values = new Set(r.values ?? []);
      allowed = allowed ? new Set([...allowed].filter((v) => values.has(v))) : values;
    }
    if (!allowed) continue;
    if (group.some((r) => r.operator === "DoesNotExist")) return true;
    for (const r of group) if (r.operator === "NotIn") for (const v of r.values ?? []) allowed.delete(v);
    if (allowed.size === 0) return true;
  }
  return false;
}

/** Whether `labels` satisfy a label selector (matchLabels and matchExpressions, ANDed; same operators). */
export function labelSelectorMatches(
  selector: V1LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  return (
    Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value) &&
    (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels[r.key]))
  );
}
