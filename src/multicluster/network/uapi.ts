import { connect } from "node:net";
import { hexKey } from "./keys.js";

/**
 * WireGuard's cross-platform configuration protocol, as wireguard-go serves it on its UAPI socket
 * (`/var/run/wireguard/<interface>.sock`): a `set=1` request of `key=value` lines ending with an
 * empty line, answered by `errno=<n>` and an empty line; keys in hex.
 */
export interface WireguardPeer {
  publicKey: string;
  /** `host:port` of the peer's gateway; absent until known (the peer then reaches us first). */
  endpoint?: string;
  /** What the peer may send and is sent (the range this cluster sees the peer's pods in). */
  allowedIps: string[];
  persistentKeepaliveSeconds?: number;
}

export interface WireguardDevice {
  privateKey: string;
  listenPort: number;
  peers: WireguardPeer[];
}

const ENDPOINT = /^(\d{1,3}(\.\d{1,3}){3}):(\d{1,5})$/;

/**
 * The whole configuration as one `set=1` request: the device's key and port, then every peer,
 * replacing whatever peers and allowed IPs the device had (a peer left out is removed).
 */
export function renderSetRequest(device: WireguardDevice): string {
  if (!Number.isInteger(device.listenPort) || device.listenPort < 1 || device.listenPort > 65535)
    throw new Error(`listenPort: ${device.listenPort} is not a port from 1 to 65535`);
  const lines = [
    "set=1",
    `private_key=${hexKey(device.privateKey, "privateKey")}`,
    `listen_port=${device.listenPort}`,
    "replace_peers=true",
  ];
  device.peers.forEach((peer, i) => {
    lines.push(`public_key=${hexKey(peer.publicKey, `peers[${i}].publicKey`)}`);
    if (peer.endpoint !== undefined) {
      if (!ENDPOINT.test(peer.endpoint))
        throw new Error(`peers[${i}].endpoint: "${peer.endpoint}" is not an IPv4 host:port`);
      lines.push(`endpoint=${peer.endpoint}`);
    }
    if (peer.persistentKeepaliveSeconds !== undefined)
      lines.push(`persistent_keepalive_interval=${peer.persistentKeepaliveSeconds}`);
    lines.push("replace_allowed_ips=true");
    for (const allowed of peer.allowedIps) lines.push(`allowed_ip=${allowed}`);
  });
  return `${lines.join("\n")}\n\n`;
}

/** What `get=1` answers about one peer. */
export interface PeerState {
  publicKey: string;
  endpoint?: string;
  lastHandshakeSeconds: number;
  rxBytes: number;
  txBytes: number;
  allowedIps: string[];
}

/** Reads a `get=1` answer (throws on a non-zero errno). */
export function parseGetResponse(text: string): { listenPort?: number; peers: PeerState[] } {
  let listenPort: number | undefined;
  const peers: PeerState[] = [];
  let errno: number | undefined;
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at < 0) continue;
    const [key, value] = [line.slice(0, at), line.slice(at + 1)];
    const peer = peers.at(-1);
    if (key === "errno") errno = Number(value);
    else if (key === "listen_port") listenPort = Number(value);
    else if (key === "public_key") {
      const publicKey = Buffer.from(value, "hex").toString("base64");
      peers.push({ publicKey, lastHandshakeSeconds: 0, rxBytes: 0, txBytes: 0, allowedIps: [] });
    } else if (peer && key === "endpoint") peer.endpoint = value;
    else if (peer && key === "last_handshake_time_sec") peer.lastHandshakeSeconds = Number(value);
    else if (peer && key === "rx_bytes") peer.rxBytes = Number(value);
    else if (peer && key === "tx_bytes") peer.txBytes = Number(value);
    else if (peer && key === "allowed_ip") peer.allowedIps.push(value);
  }
  if (errno !== undefined && errno !== 0) throw new Error(`wireguard-go refused the request: errno=${errno}`);
  return { ...(listenPort !== undefined ? { listenPort } : {}), peers };
}

/** Sends one request on the UAPI socket and answers the response (up to its empty line). */
export function uapiRequest(socketPath: string, request: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = "";
    const timer = setTimeout(
      () => socket.destroy(new Error(`no answer on ${socketPath} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
      if (/(^|\n)errno=-?\d+\n\n$/.test(answer)) socket.end();
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const errno = /errno=(-?\d+)\n\n$/.exec(answer)?.[1];
      if (errno === undefined) reject(new Error(`wireguard-go closed ${socketPath} without an answer`));
      else if (errno !== "0") reject(new Error(`wireguard-go refused the request: errno=${errno}`));
      else resolve(answer);
    });
    socket.write(request);
  });
}
