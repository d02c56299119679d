/**
 * `--selector` values for `tenantry offload`: each value is one node selector term in label
 * selector syntax (`region=eu-south,provider in (aws,gcp),!gpu`); several values are ORed.
 */
import {
  LABEL_KEY_PATTERN,
  LABEL_VALUE_PATTERN,
  type NodeSelector,
  type NodeSelectorRequirement,
} from "../apis/index.js";
import { UserError } from "../common/index.js";

const KEY = new RegExp(LABEL_KEY_PATTERN);
const VALUE = new RegExp(LABEL_VALUE_PATTERN);

/** Splits on commas that are not inside parentheses. */
function splitRequirements(term: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of term) {
    if (char === "(") depth++;
    if (char === ")") depth--;
    if (char === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim());
}

function checkKey(key: string, term: string): string {
  if (!KEY.test(key) || key.length > 317) {
    throw new UserError(`--selector "${term}": "${key}" is not a valid label key`);
  }
  return key;
}

function checkValues(values: string[], term: string): string[] {
  for (const value of values) {
    if (!VALUE.test(value) || value.length > 63) {
      throw new UserError(
        `--selector "${term}": "${value}" is not a valid label value (at most 63 characters)`,
      );
    }
  }
  return values;
}

function parseRequirement(text: string, term: string): NodeSelectorRequirement {
  let match = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/i.exec(text);
  if (match) {
    const values = match[3]!
      .split(",")
      .map((v) => v.trim())
      .filter(Boolean);
    if (values.length === 0) throw new UserError(`--selector "${term}": "${text}" lists no values`);
    return {
      key: checkKey(match[1]!, term),
      operator: match[2]!.toLowerCase() === "in" ? "In" : "NotIn",
      values: checkValues(values, term),
    };
  }
  match = /^([^!=<>\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(text);
  if (match) {
    return {
      key: checkKey(match[1]!, term),
      operator: match[2] === "!=" ? "NotIn" : "In",
      values: checkValues([match[3]!], term),
    };
  }
  match = /^([^!=<>\s]+)\s*([<>])\s*(-?\d+)$/.exec(text);
  if (match)
    return { key: checkKey(match[1]!, term), operator: match[2] === ">" ? "Gt" : "Lt", values: [match[3]!] };
  match = /^(!?)([^!=<>\s()]+)$/.exec(text);
  if (match) return { key: checkKey(match[2]!, term), operator: match[1] ? "DoesNotExist" : "Exists" };
  throw new UserError(
    `--selector "${term}": cannot read "${text}"; use key=value, key!=value, key in (a,b), key notin (a,b), key, !key, key>n or key<n`,
  );
}

/** The clusterSelector the `--selector` values describe; undefined when there are none (every peer). */
export function parseClusterSelector(terms: readonly string[]): NodeSelector | undefined {
  if (terms.length === 0) return undefined;
  if (terms.length > 32) throw new UserError(`--selector may be given at most 32 times, got ${terms.length}`);
  return {
    nodeSelectorTerms: terms.map((term) => {
      const requirements = splitRequirements(term);
      if (requirements.some((r) => r === ""))
        throw new UserError(`--selector "${term}" has an empty requirement`);
      return { matchExpressions: requirements.map((r) => parseRequirement(r, term)) };
    }),
  };
}
