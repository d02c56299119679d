import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { UserError } from "../../common/index.js";

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;

/** scrypt cost: N=2^15 takes ~50 ms here, slow enough against guessing, fast enough for logins. */
const COST = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, cost = COST): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, cost, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new UserError(
      `password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters long, got ${password.length}`,
    );
  }
}

/** `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  checkPassword(password);
  const salt = randomBytes(16);
  const key = await derive(password, salt);
  return ["scrypt", COST.N, COST.r, COST.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = encoded.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  const expected = Buffer.from(hash, "base64url");
  const key = await derive(password, Buffer.from(salt, "base64url"), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: COST.maxmem,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * Whether a password matches a user's stored hash. A user who does not exist (no hash) is checked
 * against `decoy`, a hash of the same cost, and never matches: both paths derive one scrypt key,
 * so how long a login takes does not tell which user names exist.
 */
export async function passwordMatches(
  password: string,
  hash: string | undefined,
  decoy: () => Promise<string>,
  verify: (password: string, encoded: string) => Promise<boolean> = verifyPassword,
): Promise<boolean> {
  if (hash === undefined) {
    await verify(password, await decoy());
    return false;
  }
  return verify(password, hash);
}
