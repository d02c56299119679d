import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generateGatewayKeys, hexKey, publicKeyOf } from "./keys.js";
import { parseGetResponse, renderSetRequest } from "./uapi.js";

describe("WireGuard keys", () => {
  test("a generated key's public half is what publicKeyOf derives; hex is the same 32 bytes", () => {
    const keys = generateGatewayKeys();
    assert.equal(publicKeyOf(keys.privateKey), keys.publicKey);
    assert.equal(hexKey(keys.publicKey).length, 64);
    assert.equal(Buffer.from(hexKey(keys.publicKey), "hex").toString("base64"), keys.publicKey);
    assert.throws(
      () => hexKey("not-a-key", "peers[0].publicKey"),
      /peers\[0\]\.publicKey: not a WireGuard key/,
    );
  });
});

describe("the configuration protocol", () => {
  const own = generateGatewayKeys();
  const peer = generateGatewayKeys();

  test("a set request replaces peers and their allowed IPs, keys in hex, ending with an empty line", () => {
    const text = renderSetRequest({
      privateKey: own.privateKey,
      listenPort: 51820,
      peers: [
        {
          publicKey: peer.publicKey,
          endpoint: "198.18.2.4:51820",
          allowedIps: ["10.240.1.0/24"],
          persistentKeepaliveSeconds: 10,
        },
      ],
    });
    assert.equal(
      text,
      [
        "set=1",
        `private_key=${hexKey(own.privateKey)}`,
        "listen_port=51820",
        "replace_peers=true",
        `public_key=${hexKey(peer.publicKey)}`,
        "endpoint=198.18.2.4:51820",
        "persistent_keepalive_interval=10",
        "replace_allowed_ips=true",
        "allowed_ip=10.240.1.0/24",
        "",
        "",
      ].join("\n"),
    );
  });

  test("a peer without an endpoint waits to be reached; bad values name their field", () => {
    const text = renderSetRequest({
      privateKey: own.privateKey,
      listenPort: 51820,
      peers: [{ publicKey: peer.publicKey, allowedIps: [] }],
    });
    assert.doesNotMatch(text, /endpoint=/);
    assert.throws(
      () => renderSetRequest({ privateKey: own.privateKey, listenPort: 0, peers: [] }),
      /listenPort: 0 is not a port/,
    );
    assert.throws(
      () =>
        renderSetRequest({
          privateKey: own.privateKey,
          listenPort: 51820,
          peers: [{ publicKey: peer.publicKey, endpoint: "gateway.example:51820", allowedIps: [] }],
        }),
      /peers\[0\]\.endpoint: "gateway\.example:51820" is not an IPv4 host:port/,
    );
  });

  test("a get answer gives each peer's endpoint, handshake, counters and allowed IPs", () => {
    const answer = [
      `private_key=${hexKey(own.privateKey)}`,
      "listen_port=51820",
      `public_key=${hexKey(peer.publicKey)}`,
      "protocol_version=1",
      "endpoint=198.18.2.4:51820",
      "last_handshake_time_sec=1700000000",
      "last_handshake_time_nsec=5",
      "tx_bytes=92",
      "rx_bytes=148",
      "persistent_keepalive_interval=10",
      "allowed_ip=10.240.1.0/24",
      "errno=0",
      "",
      "",
    ].join("\n");
    assert.deepEqual(parseGetResponse(answer), {
      listenPort: 51820,
      peers: [
        {
          publicKey: peer.publicKey,
          endpoint: "198.18.2.4:51820",
          lastHandshakeSeconds: 1700000000,
          rxBytes: 148,
          txBytes: 92,
          allowedIps: ["10.240.1.0/24"],
        },
      ],
    });
    assert.throws(() => parseGetResponse("errno=-22\n\n"), /errno=-22/);
  });
});
