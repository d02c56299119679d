/** Which registered clusters a logical cloud's references select: by name (DCM), or by label selector. */
import { type Cluster, type ClusterRegistry, providerOf } from "../clusters/index.js";
import type { ClusterReference, LogicalCloud } from "./api/logical-cloud.js";

export interface Selection {
  cluster: Cluster;
  /** The references that select it. */
  references: string[];
}

export interface ReferenceProblem {
  reference: string;
  /** 404: the named cluster is not registered; 400: it is not the provider's, or a selector matches nothing. */
  status: 400 | 404;
  message: string;
}

/** What one reference selects now (clusters being removed are never selected), or why nothing. */
export function resolveReference(
  reference: ClusterReference,
  registry: ClusterRegistry,
): { clusters: Cluster[]; problem?: ReferenceProblem } {
  if (reference.cluster) {
    const cluster = registry.get(reference.cluster);
    if (!cluster || cluster.metadata?.deletionTimestamp) {
      return {
        clusters: [],
        problem: {
          reference: reference.name,
          status: 404,
          message: `cluster "${reference.cluster}" is not registered`,
        },
      };
    }
    if (reference.clusterProvider && reference.clusterProvider !== providerOf(cluster)) {
      return {
        clusters: [],
        problem: {
          reference: reference.name,
          status: 404,
          message: `cluster "${reference.cluster}" belongs to provider "${providerOf(cluster)}", not "${reference.clusterProvider}"`,
        },
      };
    }
    return { clusters: [cluster] };
  }
  const clusters = reference.clusterSelector ? registry.select(reference.clusterSelector) : [];
  if (clusters.length === 0) {
    return {
      clusters,
      problem: {
        reference: reference.name,
        status: 400,
        message: "its clusterSelector matches no registered cluster",
      },
    };
  }
  return { clusters };
}

export function selectClusters(
  cloud: LogicalCloud,
  registry: ClusterRegistry,
): { selected: Map<string, Selection>; problems: string[]; referenceProblems: ReferenceProblem[] } {
  const selected = new Map<string, Selection>();
  const referenceProblems: ReferenceProblem[] = [];
  for (const reference of cloud.spec.clusterReferences ?? []) {
    const { clusters, problem } = resolveReference(reference, registry);
    if (problem) referenceProblems.push(problem);
    for (const cluster of clusters) {
      const name = cluster.metadata!.name!;
      const known = selected.get(name);
      if (known) known.references.push(reference.name);
      else selected.set(name, { cluster, references: [reference.name] });
    }
  }
  // A selector matching nothing is no problem once instantiated (clusters may join later).
  const problems = referenceProblems
    .filter((p) => p.status === 404)
    .map((p) => `cluster reference ${p.reference}: ${p.message}`);
  return { selected, problems, referenceProblems };
}
