/**
 * Kubernetes resource quantities ("250m", "1.5Gi", "2e3") as exact integers of nano-units, so that
 * sums and comparisons never suffer from floating point. Fractions below a nano-unit round up,
 * as Kubernetes rounds requests.
 */
const NANO = 1_000_000_000n;

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

/** The exponent has at most two digits, as tenantry's CRD schemas require (see QUANTITY_PATTERN). */
const FORMAT = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d{1,2})?$/;

export class QuantityError extends Error {}

function pow10(exponent: number): bigint {
  return 10n ** BigInt(exponent);
}

/** Parses a quantity into nano-units; throws QuantityError naming the text when it is not one. */
export function parseQuantity(text: string | number): bigint {
  const value = String(text).trim();
  const match = FORMAT.exec(value);
  if (!match) throw new QuantityError(`"${value}" is not a Kubernetes quantity (e.g. 500m, 2, 1.5Gi, 1e3)`);
  const [, sign, number, suffix = ""] = match;
  const [whole = "0", fraction = ""] = number!.split(".");
  const digits = BigInt(`${whole || "0"}${fraction}`);
  let exponent = -fraction.length;
  let multiplier = 1n;
  if (suffix in BINARY) multiplier = BINARY[suffix]!;
  else if (/^[eE]/.test(suffix)) exponent += Number.parseInt(suffix.slice(1), 10);
  else exponent += DECIMAL_EXPONENT[suffix]!;
  // value = digits * multiplier * 10^exponent; in nano-units: * 10^9.
  const scaled = digits * multiplier;
  const nanoExponent = exponent + 9;
  let nanos: bigint;
  if (nanoExponent >= 0) nanos = scaled * pow10(nanoExponent);
  else {
    const divisor = pow10(-nanoExponent);
    nanos = (scaled + divisor - 1n) / divisor;
  }
  return sign === "-" ? -nanos : nanos;
}

/** Formats nano-units back to a short canonical quantity ("1500m", "2", "3Gi" when exact). */
export function formatQuantity(nanos: bigint, binary = false): string {
  const sign = nanos < 0n ? "-" : "";
  const abs = nanos < 0n ? -nanos : nanos;
  if (abs === 0n) return "0";
  if (binary && abs % NANO === 0n) {
    const units = abs / NANO;
    for (const suffix of ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]) {
      const size = BINARY[suffix]!;
      if (units % size === 0n) return `${sign}${units / size}${suffix}`;
    }
  }
  for (const [suffix, exponent] of [
    ["", 9],
    ["m", 6],
    ["u", 3],
    ["n", 0],
  ] as const) {
    const size = pow10(exponent);
    if (abs % size === 0n) return `${sign}${abs / size}${suffix}`;
  }
  return `${sign}${abs}n`;
}

export type ResourceList = Record<string, string>;
/** As Kubernetes accepts them: quantities may be written as numbers (int-or-string). */
export type ResourceListInput = Record<string, string | number>;
export type ResourceAmounts = Map<string, bigint>;

export function toAmounts(list: ResourceListInput | undefined): ResourceAmounts {
  return new Map(Object.entries(list ?? {}).map(([name, value]) => [name, parseQuantity(value)]));
}

export function addAmounts(...lists: ResourceAmounts[]): ResourceAmounts {
  const sum = new Map<string, bigint>();
  for (const list of lists) for (const [name, value] of list) sum.set(name, (sum.get(name) ?? 0n) + value);
  return sum;
}

const isBinaryResource = (name: string) => /memory|storage/.test(name);

export function toResourceList(amounts: ResourceAmounts): ResourceList {
  return Object.fromEntries(
    [...amounts]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, value]) => [name, formatQuantity(value, isBinaryResource(name))]),
  );
}
