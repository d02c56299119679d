/**
 * IPv4 prefixes and the remapping of one cluster's pod network into a range another cluster can
 * route (Liqo thesis, ch. 5: each cluster sees a peer's pods in a range it chose, so identical
 * podCIDRs on both sides still tell their pods apart). The translation is 1:1 on the host part: the
 * n-th address of the peer's podCIDR is the n-th address of the range chosen for it.
 */

export interface Prefix {
  /** The network address as a 32-bit unsigned number. */
  base: number;
  bits: number;
}

const OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function parseAddress(text: string, field = "address"): number {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => OCTET.test(p)))
    throw new Error(`${field}: "${text}" is not an IPv4 address`);
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

export function formatAddress(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

export function parsePrefix(text: string, field = "prefix"): Prefix {
  const [address, length, extra] = text.split("/");
  const bits = Number(length);
  if (extra !== undefined || !address || !/^\d{1,2}$/.test(length ?? "") || bits > 32)
    throw new Error(`${field}: "${text}" is not an IPv4 prefix such as 10.200.1.0/24`);
  const value = parseAddress(address, field);
  const size = 2 ** (32 - bits);
  if (value % size !== 0)
    throw new Error(
      `${field}: "${text}" has host bits set (the network is ${formatPrefix({ base: value - (value % size), bits })})`,
    );
  return { base: value, bits };
}

export function formatPrefix(prefix: Prefix): string {
  return `${formatAddress(prefix.base)}/${prefix.bits}`;
}

export function prefixSize(prefix: Prefix): number {
  return 2 ** (32 - prefix.bits);
}

export function contains(prefix: Prefix, address: number): boolean {
  return address >= prefix.base && address < prefix.base + prefixSize(prefix);
}

export function overlaps(a: Prefix, b: Prefix): boolean {
  return contains(a, b.base) || contains(b, a.base);
}

/**
 * `address` of prefix `from` translated to the same host part of `to` (as nftables' `dnat ip
 * prefix to` / NETMAP translate); undefined when `from` does not hold it. The two must be of one size.
 */
export function remapAddress(address: string, from: string, to: string): string | undefined {
  const [source, target] = [parsePrefix(from, "from"), parsePrefix(to, "to")];
  if (source.bits !== target.bits)
    throw new Error(`cannot remap ${from} onto ${to}: the prefixes differ in size`);
  const value = parseAddress(address);
  if (!contains(source, value)) return undefined;
  return formatAddress(target.base + (value - source.base));
}

/** The pool the ranges a cluster gives its peers' pods are taken from (none of the clusters' own). */
export const REMAP_POOL = "10.240.0.0/12";

/**
 * The first range of `size` bits in `pool` that overlaps neither the cluster's own podCIDR nor a
 * range already given to another peer: where this cluster will see a new peer's pods.
 */
export function allocateRemapRange(options: {
  bits: number;
  taken: readonly string[];
  pool?: string;
}): string {
  const pool = parsePrefix(options.pool ?? REMAP_POOL, "pool");
  if (options.bits < pool.bits || options.bits > 30)
    throw new Error(`a remapped range of /${options.bits} does not fit the pool ${formatPrefix(pool)}`);
  const taken = options.taken.map((t) => parsePrefix(t, "taken"));
  const step = 2 ** (32 - options.bits);
  for (let base = pool.base; base < pool.base + prefixSize(pool); base += step) {
    const candidate = { base, bits: options.bits };
    if (!taken.some((t) => overlaps(t, candidate))) return formatPrefix(candidate);
  }
  throw new Error(`the pool ${formatPrefix(pool)} has no free /${options.bits} left for another peer`);
}
