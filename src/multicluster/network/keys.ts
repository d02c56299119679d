import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";

/**
 * WireGuard keys (Curve25519), as `wg genkey`/`wg pubkey` write them: 32 bytes in standard base64.
 * The configuration protocol carries them in hex.
 */
export interface GatewayKeys {
  privateKey: string;
  publicKey: string;
}

const KEY = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw480]=$/;

export function isWireguardKey(text: string): boolean {
  return KEY.test(text);
}

export function generateGatewayKeys(): GatewayKeys {
  const { privateKey } = generateKeyPairSync("x25519");
  const jwk = privateKey.export({ format: "jwk" });
  return { privateKey: base64(jwk.d!), publicKey: base64(jwk.x!) };
}

/** The public key of a private key (both base64). */
export function publicKeyOf(privateKey: string): string {
  const d = Buffer.from(checkedKey(privateKey, "privateKey"), "base64").toString("base64url");
  const key = createPrivateKey({ key: { kty: "OKP", crv: "X25519", d, x: "" }, format: "jwk" });
  return base64(createPublicKey(key).export({ format: "jwk" }).x!);
}

/** A base64 key in the hex form of the configuration protocol. */
export function hexKey(key: string, field = "key"): string {
  return Buffer.from(checkedKey(key, field), "base64").toString("hex");
}

function checkedKey(key: string, field: string): string {
  if (!isWireguardKey(key)) throw new Error(`${field}: not a WireGuard key (32 bytes in base64)`);
  return key;
}

function base64(base64url: string): string {
  return Buffer.from(base64url, "base64url").toString("base64");
}
