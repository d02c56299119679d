import type { KubeConfig } from "@kubernetes/client-node";

/**
 * Gives every request made through `kubeConfig`'s API clients a deadline (and `signal`, when
 * given, aborts them all). client-node asks the KubeConfig to authenticate each request, which
 * is where the signal is attached; watches do not pass there and are not affected.
 */
export function withRequestDeadline(
  kubeConfig: KubeConfig,
  timeoutMs: number,
  signal?: AbortSignal,
): KubeConfig {
  const target = kubeConfig as unknown as {
    applySecurityAuthentication(context: { setSignal(signal: AbortSignal): void }): Promise<void>;
  };
  const original = target.applySecurityAuthentication.bind(kubeConfig);
  target.applySecurityAuthentication = async (context) => {
    await original(context);
    const deadline = AbortSignal.timeout(timeoutMs);
    context.setSignal(signal ? AbortSignal.any([deadline, signal]) : deadline);
  };
  return kubeConfig;
}
