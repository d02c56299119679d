/**
 * The label and field selectors of a SubjectAccessReview (kube-apiserver ≥ 1.32 sends them to
 * authorization webhooks for list, watch and deletecollection: AuthorizeWithSelectors), reduced to
 * what an authorizer can rely on: the values a selector pins a key to.
 */

export interface SelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** authorization.k8s.io/v1 LabelSelectorAttributes and FieldSelectorAttributes. */
export interface SelectorAttributes {
  rawSelector?: string;
  requirements?: SelectorRequirement[];
}

/**
 * The values `selector` restricts `key` to: every object it matches has one of them. Undefined
 * when it does not restrict the key to a finite set (absent, `!=`, `notin`, exists…). Parsed
 * requirements win over the raw text, as in kube-apiserver.
 */
export function pinnedValues(selector: SelectorAttributes | undefined, key: string): Set<string> | undefined {
  const requirements = selector?.requirements?.length
    ? selector.requirements
    : parseEqualities(selector?.rawSelector ?? "");
  let pinned: Set<string> | undefined;
  for (const r of requirements) {
    if (r.key !== key || r.operator.toLowerCase() !== "in" || !r.values?.length) continue;
    // Several requirements on one key: an object must satisfy all, so only common values remain.
    const values = new Set(r.values);
    pinned = pinned ? new Set([...pinned].filter((v) => values.has(v))) : values;
  }
  return pinned;
}

/** The `key=value`, `key==value` and `key in (a,b)` terms of a raw selector, as In requirements. */
function parseEqualities(raw: string): SelectorRequirement[] {
  const terms = raw.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  const requirements: SelectorRequirement[] = [];
  for (const term of terms) {
    const equality = /^\s*([^\s=!]+)\s*==?\s*([^\s=]*)\s*$/.exec(term);
    if (equality) {
      requirements.push({ key: equality[1]!, operator: "In", values: [equality[2]!] });
      continue;
    }
    const set = /^\s*(\S+)\s+in\s*\(([^)]*)\)\s*$/.exec(term);
    if (set) {
      const values = set[2]!
        .split(",")
        .map((v) => v.trim())
        .filter(Boolean);
      requirements.push({ key: set[1]!, operator: "In", values });
    }
  }
  return requirements;
}
