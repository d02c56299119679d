/**
 * Which virtual nodes a ReplicatedDeployment may use, and how they group into combinations of
 * generation-label values (Liqo thesis, 7.1.1): one replica per combination, named after a stable
 * hash of it so the same combination always maps to the same Deployment.
 */
import { createHash } from "node:crypto";
import type { V1Node, V1NodeSelector } from "@kubernetes/client-node";
import { REPLICA_HASH_LENGTH } from "../api/replicated-deployment.js";
import { selectorMatches } from "../selectors.js";

/** One group of virtual nodes sharing the generation labels' values: one replica. */
export interface Combination {
  /** Name suffix of the replica and value of its `tenantry.dev/replica` label. */
  hash: string;
  /** Generation label → value; empty with node granularity. */
  values: Record<string, string>;
  /** With node granularity (no generation labels): the one virtual node. */
  node?: string;
  /** Names of the virtual nodes in the combination, sorted. */
  nodes: string[];
}

export interface NodeGrouping {
  /** Sorted by hash, so the order is stable. */
  combinations: Combination[];
  /** Selected virtual nodes left out because they lack one of the generation labels, sorted. */
  unlabelled: string[];
}

// Lower-case letters and digits only: valid in names and label values, 5 bits per character.
const HASH_ALPHABET = "0123456789abcdefghijklmnopqrstuv";

/** A short, stable hash of `text`: REPLICA_HASH_LENGTH characters of SHA-256 in base 32 (50 bits). */
export function shortHash(text: string): string {
  const digest = createHash("sha256").update(text).digest();
  let out = "";
  for (let i = 0; i < REPLICA_HASH_LENGTH; i++) {
    // 5 bits starting at bit 5*i.
    const bit = 5 * i;
    const word = (digest[bit >> 3]! << 8) | digest[(bit >> 3) + 1]!;
    out += HASH_ALPHABET[(word >> (11 - (bit & 7))) & 31];
  }
  return out;
}

/**
 * The identity of a combination as text: label keys and values in key order (JSON, so no two
 * combinations share one), or the node's name with node granularity, tagged so that neither form
 * can be mistaken for the other.
 */
export function combinationIdentity(values: Record<string, string>, node?: string): string {
  if (node !== undefined) return JSON.stringify({ node });
  const pairs = Object.keys(values)
    .sort()
    .map((key) => [key, values[key]]);
  return JSON.stringify({ labels: pairs });
}

export function combinationHash(values: Record<string, string>, node?: string): string {
  return shortHash(combinationIdentity(values, node));
}

/** `<name>-<hash>`: at most 63 characters given the name's own limit. */
export function replicaName(replicatedDeployment: string, hash: string): string {
  return `${replicatedDeployment}-${hash}`;
}

/**
 * Virtual nodes matching both the namespace's clusterSelector (absent: every virtual node) and the
 * ReplicatedDeployment's selectedClusters (absent: no further filter), sorted by name.
 */
export function selectNodes(
  nodes: readonly V1Node[],
  clusterSelector: V1NodeSelector | undefined,
  selectedClusters: V1NodeSelector | undefined,
): V1Node[] {
  return nodes
    .filter((node) => !node.metadata?.deletionTimestamp)
    .filter((node) => !clusterSelector || selectorMatches(clusterSelector, node))
    .filter((node) => !selectedClusters || selectorMatches(selectedClusters, node))
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
}

/**
 * Groups nodes by the values of `generationLabels`; none means one group per node. Throws if two
 * combinations hash alike, rather than let two replicas share one Deployment.
 */
export function groupNodes(nodes: readonly V1Node[], generationLabels: readonly string[]): NodeGrouping {
  const groups = new Map<string, Combination>();
  const unlabelled: string[] = [];
  for (const node of nodes) {
    const name = node.metadata!.name!;
    const labels = node.metadata?.labels ?? {};
    let combination: Omit<Combination, "nodes">;
    if (generationLabels.length === 0) {
      combination = { hash: combinationHash({}, name), values: {}, node: name };
    } else {
      if (generationLabels.some((key) => labels[key] === undefined)) {
        unlabelled.push(name);
        continue;
      }
      const values = Object.fromEntries(generationLabels.map((key) => [key, labels[key]!]));
      combination = { hash: combinationHash(values), values };
    }
    const existing = groups.get(combination.hash);
    if (!existing) {
      groups.set(combination.hash, { ...combination, nodes: [name] });
      continue;
    }
    if (
      combinationIdentity(existing.values, existing.node) !==
      combinationIdentity(combination.values, combination.node)
    ) {
      throw new Error(
        `combinations ${combinationIdentity(existing.values, existing.node)} and ${combinationIdentity(combination.values, combination.node)} share hash ${combination.hash}`,
      );
    }
    existing.nodes.push(name);
  }
  const combinations = [...groups.values()].sort((a, b) => a.hash.localeCompare(b.hash));
  for (const c of combinations) c.nodes.sort();
  return { combinations, unlabelled: unlabelled.sort() };
}
