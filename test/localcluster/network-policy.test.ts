/**
 * NetworkPolicy enforced with traffic on the local clusters (kube-router's NetworkPolicy
 * controller in the process node's network namespace), proven on the cases of Kubernetes' own e2e
 * suite (test/e2e/network/netpol/network_policy.go, names kept): pods a, b, c in namespaces x, y, z,
 * every pair probed on ports 80 and 81 against the expected truth table.
 */
import { after, before, describe, test } from "node:test";
import { CoreV1Api, NetworkingV1Api, type V1NetworkPolicy } from "@kubernetes/client-node";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { expectConnectivity, type ProbePod, serverPod } from "../support/netpol.js";

const NAMESPACES = ["x", "y", "z"] as const;
const PODS = ["a", "b", "c"] as const;

describe("NetworkPolicy, as Kubernetes' e2e suite checks it", () => {
  const suffix = uniqueName("np");
  const ns = (short: string) => `${short}-${suffix}`;
  const api = testKubeConfig("home").makeApiClient(CoreV1Api);
  const networking = testKubeConfig("home").makeApiClient(NetworkingV1Api);
  let pods: ProbePod[] = [];
  const pod = (namespace: string, name: string) =>
    pods.find((p) => p.namespace === ns(namespace) && p.name === name)!;
  const short = (p: ProbePod) => p.namespace.split("-")[0]!;
  const created: { namespace: string; name: string }[] = [];

  async function apply(namespace: string, policy: V1NetworkPolicy): Promise<void> {
    await networking.createNamespacedNetworkPolicy({ namespace: ns(namespace), body: policy });
    created.push({ namespace: ns(namespace), name: policy.metadata!.name! });
  }

  before(async () => {
    for (const n of NAMESPACES)
      await api.createNamespace({ body: { metadata: { name: ns(n), labels: { ns: n } } } });
    pods = await Promise.all(
      NAMESPACES.flatMap((n) => PODS.map((p) => serverPod(api, ns(n), p, { pod: p }))),
    );
    // Before any policy: everything reaches everything.
    await expectConnectivity(pods, 80, () => true);
  });
  after(async () => {
    for (const n of NAMESPACES) await api.deleteNamespace({ name: ns(n) }).catch(() => {});
  });

  // Each case starts from no policy and removes its own at the end.
  async function withPolicies(
    policies: [string, V1NetworkPolicy][],
    check: () => Promise<void>,
  ): Promise<void> {
    for (const [namespace, policy] of policies) await apply(namespace, policy);
    try {
      await check();
    } finally {
      for (const { namespace, name } of created.splice(0))
        await networking.deleteNamespacedNetworkPolicy({ namespace, name }).catch(() => {});
      await expectConnectivity(pods, 80, () => true);
    }
  }

  test("should support a 'default-deny-ingress' policy", () =>
    withPolicies(
      [["x", { metadata: { name: "deny-ingress" }, spec: { podSelector: {}, policyTypes: ["Ingress"] } }]],
      () => expectConnectivity(pods, 80, (from, to) => short(to) !== "x" || from === to),
    ));

  test("should support a 'default-deny-all' policy", () =>
    withPolicies(
      [
        [
          "x",
          { metadata: { name: "deny-all" }, spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] } },
        ],
      ],
      () =>
        expectConnectivity(pods, 80, (from, to) => from === to || (short(from) !== "x" && short(to) !== "x")),
    ));

  test("should enforce policy to allow traffic from pods within server namespace based on PodSelector", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "x-a-allows-x-b" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Ingress"],
              ingress: [{ _from: [{ podSelector: { matchLabels: { pod: "b" } } }] }],
            },
          },
        ],
      ],
      () =>
        expectConnectivity(
          pods,
          80,
          (from, to) => to !== pod("x", "a") || from === to || from === pod("x", "b"),
        ),
    ));

  test("should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "allow-other-namespaces" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Ingress"],
              ingress: [
                {
                  _from: [
                    {
                      namespaceSelector: {
                        matchExpressions: [{ key: "ns", operator: "NotIn", values: ["x"] }],
                      },
                    },
                  ],
                },
              ],
            },
          },
        ],
      ],
      () =>
        expectConnectivity(
          pods,
          80,
          (from, to) => to !== pod("x", "a") || from === to || short(from) !== "x",
        ),
    ));

  test("should enforce policy based on PodSelector and NamespaceSelector", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "allow-y-b" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Ingress"],
              ingress: [
                {
                  _from: [
                    {
                      namespaceSelector: { matchLabels: { ns: "y" } },
                      podSelector: { matchLabels: { pod: "b" } },
                    },
                  ],
                },
              ],
            },
          },
        ],
      ],
      () =>
        expectConnectivity(
          pods,
          80,
          (from, to) => to !== pod("x", "a") || from === to || from === pod("y", "b"),
        ),
    ));

  test("should enforce policy based on Ports", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "allow-81" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Ingress"],
              ingress: [
                { _from: [{ namespaceSelector: {} }], ports: [{ port: 81 as never, protocol: "TCP" }] },
              ],
            },
          },
        ],
      ],
      async () => {
        await expectConnectivity(pods, 80, (from, to) => to !== pod("x", "a") || from === to);
        await expectConnectivity(pods, 81, () => true);
      },
    ));

  test("should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "x-a-to-y-a" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Egress"],
              egress: [
                {
                  to: [
                    {
                      namespaceSelector: { matchLabels: { ns: "y" } },
                      podSelector: { matchLabels: { pod: "a" } },
                    },
                  ],
                },
              ],
            },
          },
        ],
      ],
      () =>
        expectConnectivity(
          pods,
          80,
          (from, to) => from !== pod("x", "a") || to === from || to === pod("y", "a"),
        ),
    ));

  test("should enforce except clause while egress access to server in CIDR block", () =>
    withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "egress-except-y-a" },
            spec: {
              podSelector: { matchLabels: { pod: "a" } },
              policyTypes: ["Egress"],
              egress: [{ to: [{ ipBlock: { cidr: "0.0.0.0/0", except: [`${pod("y", "a").ip}/32`] } }] }],
            },
          },
        ],
      ],
      () => expectConnectivity(pods, 80, (from, to) => from !== pod("x", "a") || to !== pod("y", "a")),
    ));

  test("should deny ingress access to updated pod", async () => {
    await withPolicies(
      [
        [
          "x",
          {
            metadata: { name: "deny-targets" },
            spec: { podSelector: { matchLabels: { target: "true" } }, policyTypes: ["Ingress"] },
          },
        ],
      ],
      async () => {
        await expectConnectivity(pods, 80, () => true);
        await api.patchNamespacedPod({
          namespace: ns("x"),
          name: "a",
          body: [{ op: "add", path: "/metadata/labels/target", value: "true" }],
        });
        try {
          await expectConnectivity(pods, 80, (from, to) => to !== pod("x", "a") || from === to);
        } finally {
          await api.patchNamespacedPod({
            namespace: ns("x"),
            name: "a",
            body: [{ op: "remove", path: "/metadata/labels/target" }],
          });
          await eventually(async () => {
            const read = await api.readNamespacedPod({ namespace: ns("x"), name: "a" });
            if (read.metadata?.labels?.target) throw new Error("still labelled");
          });
        }
      },
    );
  });
});
