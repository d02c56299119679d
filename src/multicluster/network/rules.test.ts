import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { generateGatewayKeys } from "./keys.js";
import { gatewayRules } from "./rules.js";

describe("the gateway's rules", () => {
  const config = {
    listenPort: 51820,
    podCidr: "10.200.1.0/24",
    peers: [
      {
        cluster: "edge-1",
        name: "edge-1",
        podCidr: "10.200.1.0/24",
        publicKey: generateGatewayKeys().publicKey,
        remappedCidr: "10.240.1.0/24",
        seenAs: "10.241.0.0/24",
      },
    ],
    namespaces: [
      { id: 1, name: "team-a", local: ["10.200.1.5"], remote: ["10.240.1.7", "10.240.1.8"] },
      { id: 2, name: "team-b", local: ["10.200.1.6"], remote: [] },
    ],
  };

  test("remaps both ways per peer: incoming onto the podCIDR, outgoing into the range the peer sees", () => {
    const rules = gatewayRules(config);
    assert.match(
      rules,
      /iifname "wg0" ip saddr 10\.240\.1\.0\/24 ip daddr 10\.241\.0\.0\/24 dnat ip prefix to 10\.200\.1\.0\/24/,
    );
    assert.match(
      rules,
      /oifname "wg0" ip saddr 10\.200\.1\.0\/24 ip daddr 10\.240\.1\.0\/24 snat ip prefix to 10\.241\.0\.0\/24/,
    );
    assert.match(rules, /^add table ip tenantry-gateway\ndelete table ip tenantry-gateway\n/);
  });

  test("only pairs of one namespace pass: local addresses name it, remote ones are listed under it", () => {
    const rules = gatewayRules(config);
    assert.match(rules, /elements = \{ 10\.200\.1\.5 : 1, 10\.200\.1\.6 : 2 \}/);
    assert.match(rules, /elements = \{ 1 \. 10\.240\.1\.7, 1 \. 10\.240\.1\.8 \}/);
    assert.match(
      rules,
      /oifname "wg0" meta mark set ip saddr map @local_namespace meta mark \. ip daddr @remote_pods accept/,
    );
    assert.match(rules, /oifname "wg0" counter drop\n\t\tiifname "wg0" counter drop/);
    assert.match(rules, /chain input \{[^}]*iifname "wg0" drop/);
  });

  test("nothing offloaded: empty sets, everything across dropped", () => {
    const rules = gatewayRules({ ...config, namespaces: [] });
    assert.doesNotMatch(rules, /elements/);
    assert.match(rules, /iifname "wg0" counter drop/);
  });

  test("bad input names the field", () => {
    assert.throws(() => gatewayRules({ ...config, podCidr: "10.200.1.0/33" }), /podCidr:/);
    assert.throws(
      () => gatewayRules({ ...config, namespaces: [{ id: 0, name: "x", local: [], remote: [] }] }),
      /namespaces\[0\]\.id: 0/,
    );
    assert.throws(
      () =>
        gatewayRules({
          ...config,
          namespaces: [{ id: 1, name: "x", local: ["10.200.1.5; drop"], remote: [] }],
        }),
      /namespaces\[0\]\.local: .* is not an IPv4 address/,
    );
  });
});
