/** IPv4 prefixes as the pod network needs them: parse, contain, count and number their hosts. */

export function parseAddress(text: string): number {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255))
    throw new Error(`"${text}" is not an IPv4 address`);
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

export function formatAddress(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

export class Cidr {
  /** The prefix's first address, as a number. */
  readonly base: number;

  constructor(
    base: number,
    readonly bits: number,
  ) {
    const size = 2 ** (32 - bits);
    this.base = base - (base % size);
  }

  static parse(text: string): Cidr {
    const match = /^([\d.]+)\/(\d{1,2})$/.exec(text);
    const bits = match ? Number(match[2]) : Number.NaN;
    if (!match || !(bits >= 0 && bits <= 32))
      throw new Error(`"${text}" is not an IPv4 prefix such as 10.200.7.0/24`);
    const base = parseAddress(match[1]!);
    const cidr = new Cidr(base, bits);
    if (cidr.base !== base) throw new Error(`"${text}" has host bits set (the prefix is ${cidr})`);
    return cidr;
  }

  get size(): number {
    return 2 ** (32 - this.bits);
  }

  /** The n-th address of the prefix (0 is the network address). */
  at(n: number): string {
    if (!Number.isInteger(n) || n < 0 || n >= this.size) throw new Error(`no address number ${n} in ${this}`);
    return formatAddress(this.base + n);
  }

  /** Where an address lies in the prefix, or -1 outside. */
  indexOf(address: string): number {
    let value: number;
    try {
      value = parseAddress(address);
    } catch {
      return -1;
    }
    return value >= this.base && value < this.base + this.size ? value - this.base : -1;
  }

  contains(address: string): boolean {
    return this.indexOf(address) >= 0;
  }

  overlaps(other: Cidr): boolean {
    return this.base < other.base + other.size && other.base < this.base + this.size;
  }

  toString(): string {
    return `${formatAddress(this.base)}/${this.bits}`;
  }
}
