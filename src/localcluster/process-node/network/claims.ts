import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot } from "../../../common/index.js";
import { acquireLock } from "../../lock.js";
import { FIRST_NETWORK, LAST_NETWORK, type NetworkPlan, networkPlan } from "./plan.js";

/**
 * Which local cluster on this machine has which network index (plan.ts). Claims live in the shared
 * cache folder under a lock, so concurrent starts anywhere on the machine never pick the same one;
 * the cluster's own folder records its network so the next start keeps it.
 */
interface Claim {
  clusterDir: string;
  claimedAt: string;
}

/** What a cluster folder records of its network. */
export interface RecordedNetwork {
  index: number;
  podCidr: string;
}

/** A claim written in the last minutes belongs to a cluster that may still be starting. */
const FRESH_CLAIM_MS = 5 * 60_000;

function claimsDir(): string {
  return join(cacheRoot(), "process-node-networks");
}

function claimFile(index: number): string {
  return join(claimsDir(), `net-${index}.json`);
}

export function recordedNetworkFile(clusterDir: string): string {
  return join(clusterDir, "process-node", "network.json");
}

export async function readRecordedNetwork(clusterDir: string): Promise<RecordedNetwork | undefined> {
  try {
    const recorded = JSON.parse(await readFile(recordedNetworkFile(clusterDir), "utf8")) as RecordedNetwork;
    networkPlan(recorded.index, recorded.podCidr);
    return recorded;
  } catch {
    return undefined;
  }
}

/**
 * Claims a network for the cluster in `clusterDir`: the one it had before if still its own, else a
 * free one whose addresses no route of the machine already covers (`taken`). A claim is free when
 * its cluster folder is gone, records another network, or its process node is not running.
 * `podCidr` (a /24) replaces the default 10.200.<k>.0/24, e.g. to give two clusters the same one.
 */
export async function claimNetwork(
  clusterDir: string,
  options: {
    isClusterRunning: (clusterDir: string) => Promise<boolean>;
    taken?: (plan: NetworkPlan) => boolean;
    podCidr?: string;
    /** Removes what is left on the machine of a network whose cluster folder is gone. */
    removeAbandoned?: (index: number) => Promise<void>;
  },
): Promise<NetworkPlan> {
  await mkdir(claimsDir(), { recursive: true });
  const release = await acquireLock(join(claimsDir(), ".lock"), "claiming a pod network", 60_000);
  try {
    if (options.removeAbandoned) await sweepAbandoned(options.removeAbandoned);
    const previous = await readRecordedNetwork(clusterDir);
    const candidates: number[] = previous ? [previous.index] : [];
    for (let index = FIRST_NETWORK; index <= LAST_NETWORK; index++)
      if (!candidates.includes(index)) candidates.push(index);
    for (const index of candidates) {
      const claim = await readFile(claimFile(index), "utf8").then(
        (text) => JSON.parse(text) as Claim,
        () => undefined,
      );
      if (
        claim &&
        claim.clusterDir !== clusterDir &&
        (await claimHeld(claim, index, options.isClusterRunning))
      )
        continue;
      const plan = networkPlan(index, options.podCidr);
      if (index !== previous?.index && options.taken?.(plan)) continue;
      await writeFile(
        claimFile(index),
        JSON.stringify({ clusterDir, claimedAt: new Date().toISOString() } satisfies Claim),
      );
      await mkdir(join(clusterDir, "process-node"), { recursive: true });
      const recorded: RecordedNetwork = { index, podCidr: plan.podCidr };
      await writeFile(recordedNetworkFile(clusterDir), `${JSON.stringify(recorded)}\n`);
      return plan;
    }
    throw new Error(
      `every pod network from ${FIRST_NETWORK} to ${LAST_NETWORK} is claimed by a running local cluster (claims in ${claimsDir()})`,
    );
  } finally {
    await release();
  }
}

/**
 * Networks whose cluster folder is gone (a test run's temporary folder deleted after a crash) are
 * removed from the machine and their claims dropped: a leaked namespace outlives its processes.
 */
async function sweepAbandoned(remove: (index: number) => Promise<void>): Promise<void> {
  for (const file of await readdir(claimsDir())) {
    const index = Number(/^net-(\d+)\.json$/.exec(file)?.[1]);
    if (!Number.isInteger(index)) continue;
    const claim = await readFile(join(claimsDir(), file), "utf8").then(
      (text) => JSON.parse(text) as Claim,
      () => undefined,
    );
    if (!claim || existsSync(claim.clusterDir)) continue;
    await remove(index);
    await rm(join(claimsDir(), file), { force: true });
  }
}

async function claimHeld(
  claim: Claim,
  index: number,
  isClusterRunning: (clusterDir: string) => Promise<boolean>,
): Promise<boolean> {
  if (!existsSync(claim.clusterDir)) return false;
  if ((await readRecordedNetwork(claim.clusterDir))?.index !== index) return false;
  if (Date.now() - Date.parse(claim.claimedAt) < FRESH_CLAIM_MS) return true;
  return isClusterRunning(claim.clusterDir);
}

/** Gives the cluster's network back (the cluster's folder is being deleted). */
export async function releaseNetwork(clusterDir: string): Promise<void> {
  const recorded = await readRecordedNetwork(clusterDir);
  if (!recorded) return;
  const claim = await readFile(claimFile(recorded.index), "utf8").then(
    (text) => JSON.parse(text) as Claim,
    () => undefined,
  );
  if (claim?.clusterDir === clusterDir) await rm(claimFile(recorded.index), { force: true });
}
