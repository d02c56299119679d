/**
 * Pool sizing and bin filling, as pure functions: how many volumes of each size to keep ready from
 * the advisor's forecast, and which backing store takes the next volume.
 */
import { formatQuantity, parseQuantity } from "../../common/index.js";
import type { BackingStore } from "../api/volume-pool.js";

const NANO = 1_000_000_000n;
const MIB = 1024n * 1024n;

/** Bytes of a quantity (rounded up to a whole byte). */
export function bytesOf(quantity: string | number): bigint {
  return (parseQuantity(quantity) + NANO - 1n) / NANO;
}

/** A size in bytes as the short quantity Kubernetes would print (1Gi, 1536Mi, 1000). */
export function sizeText(bytes: bigint): string {
  return formatQuantity(bytes * NANO, true);
}

/** Sizes of volumes made on demand: whole MiB, at least 16 MiB (ext4 needs room for its journal). */
export function onDemandSize(request: bigint): bigint {
  const rounded = ((request + MIB - 1n) / MIB) * MIB;
  return rounded < 16n * MIB ? 16n * MIB : rounded;
}

/** The smallest of `sizes` that holds `request`, or undefined when none does. */
export function fitSize(request: bigint, sizes: readonly bigint[]): bigint | undefined {
  let best: bigint | undefined;
  for (const size of sizes) if (size >= request && (best === undefined || size < best)) best = size;
  return best;
}

/** The forecast of claims per pool size: each request size counts for the smallest pool size that holds it. */
export function demandBySize(
  forecastByRequest: ReadonlyMap<bigint, number>,
  sizes: readonly bigint[],
): Map<bigint, number> {
  const demand = new Map<bigint, number>(sizes.map((s) => [s, 0]));
  for (const [request, forecast] of forecastByRequest) {
    const size = fitSize(request, sizes);
    if (size !== undefined) demand.set(size, (demand.get(size) ?? 0) + forecast);
  }
  return demand;
}

export interface WarmPolicy {
  min: number;
  max: number;
  forecastWindows: number;
}

export function warmPolicy(spec: { min?: number; max?: number; forecastWindows?: number } | undefined) {
  return { min: spec?.min ?? 1, max: spec?.max ?? 100, forecastWindows: spec?.forecastWindows ?? 2 };
}

/** Ready volumes to keep: the forecast demand over `forecastWindows` windows, between min and max. */
export function warmTarget(demandPerWindow: number, policy: WarmPolicy): number {
  // A forecast of 2.0000000001 claims is 2 claims: floating-point dust must not buy a volume.
  const wanted = Math.ceil(demandPerWindow * policy.forecastWindows - 1e-6);
  return Math.max(policy.min, Math.min(policy.max, Math.max(0, wanted)));
}

/** One backing store as bin filling sees it. */
export interface StoreUse {
  store: BackingStore;
  capacity: bigint;
  /** Sum of the sizes of the volumes on it. */
  allocated: bigint;
  volumes: number;
  /** Set when the store takes nothing more whatever its capacity (its disk is full). */
  fullReason?: string;
}

/** Why a store cannot take a volume of `size`, or undefined when it can. */
export function refusal(use: StoreUse, size: bigint): string | undefined {
  if (use.fullReason) return use.fullReason;
  if (use.allocated + size > use.capacity)
    return `${sizeText(use.allocated)} of ${sizeText(use.capacity)} allocated, no room for ${sizeText(size)}`;
  return undefined;
}

/**
 * The store that takes the next volume: stores are filled in turn, so the first one (in the pool's
 * order) that has room and that `eligible` accepts (the claim's node or zone).
 */
export function chooseStore(
  uses: readonly StoreUse[],
  size: bigint,
  eligible: (store: BackingStore) => boolean = () => true,
): StoreUse | undefined {
  return uses.find((use) => eligible(use.store) && refusal(use, size) === undefined);
}

/** Why no store took the volume, one line naming each store (for Events and conditions). */
export function noStoreMessage(
  uses: readonly StoreUse[],
  size: bigint,
  eligible: (store: BackingStore) => boolean = () => true,
  where = "",
): string {
  const candidates = uses.filter((u) => eligible(u.store));
  if (candidates.length === 0) return `no backing store of the pool is on ${where || "an eligible node"}`;
  return `no backing store has room for ${sizeText(size)}${where ? ` on ${where}` : ""}: ${candidates
    .map((u) => `${u.store.name}: ${refusal(u, size)}`)
    .join("; ")}`;
}
