import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createProgress } from "../../common/index.js";
import type { LocalImageKind } from "./constants.js";
import { imageRepository, RUNTIME_AGENT } from "./images.js";
import {
  ensureJupyterServer,
  JUPYTER_REQUIREMENTS,
  type JupyterServerInstall,
  jupyterServerInstalled,
} from "./jupyter-venv.js";

/**
 * "Pulling" an image on the process node: the echo server and pause are part of the harness and
 * always present; the Jupyter image is its pinned virtualenv, installed once (every pod waiting
 * for it shares the one install and its progress).
 */
export class ImagePuller {
  private readonly digests = new Map<LocalImageKind, string>();
  private jupyterPull?: Promise<JupyterServerInstall>;
  private readonly listeners = new Set<(detail: string) => void>();

  constructor(private readonly programs: { echoServer: string; backupAgent?: string }) {}

  private jupyterPresent = false;

  async present(kind: LocalImageKind): Promise<boolean> {
    if (kind !== "jupyter") return true;
    // Once installed it stays: no need to ask Python for its version at every start.
    this.jupyterPresent ||= await jupyterServerInstalled();
    return this.jupyterPresent;
  }

  /** Pulls (installs) the image; resolves with the milliseconds the pull itself took. */
  async pull(kind: LocalImageKind, progress: (detail: string) => void): Promise<number> {
    const started = Date.now();
    if (kind !== "jupyter") return 0;
    this.listeners.add(progress);
    try {
      await this.jupyter();
    } finally {
      this.listeners.delete(progress);
    }
    return Date.now() - started;
  }

  jupyter(): Promise<JupyterServerInstall> {
    if (!this.jupyterPull) {
      const shown = createProgress("pull jupyter-server");
      let lastPercent = -10;
      this.jupyterPull = ensureJupyterServer({
        progress: (done, total, detail) => {
          shown.update(done, total, detail);
          const percent = Math.floor((100 * done) / total);
          if (percent < lastPercent + 10 && done < total) return;
          lastPercent = percent;
          for (const listener of this.listeners) listener(`${percent}% (${done}/${total} ${detail})`);
        },
      }).then(
        (install) => {
          shown.finish(install.reused ? "already installed" : `installed in ${install.dir}`);
          return install;
        },
        (err) => {
          // The next pod tries again (a network hiccup must not fail every later pull).
          this.jupyterPull = undefined;
          throw err;
        },
      );
    }
    return this.jupyterPull;
  }

  /** `<repository>@sha256:<digest of what runs for it here>`, standing for the image's ID. */
  imageID(kind: LocalImageKind, image: string): string {
    let digest = this.digests.get(kind);
    if (!digest) {
      const content =
        kind === "jupyter"
          ? readFileSync(JUPYTER_REQUIREMENTS, "utf8")
          : kind === "echo"
            ? readFileSync(this.programs.echoServer, "utf8")
            : kind === "backupAgent" && this.programs.backupAgent
              ? readFileSync(this.programs.backupAgent, "utf8")
              : kind === "runtimeAgent"
                ? readFileSync(RUNTIME_AGENT, "utf8")
                : "sleep infinity";
      digest = createHash("sha256").update(content).digest("hex");
      this.digests.set(kind, digest);
    }
    return `${imageRepository(image)}@sha256:${digest}`;
  }
}
