import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LOCAL_IMAGES } from "./constants.js";
import {
  backupAgentArgs,
  containerProgram,
  hostPathOf,
  imageKind,
  imageRepository,
  jupyterServerArgs,
  pullPolicy,
  shellArgs,
  unknownImageMessage,
} from "./images.js";

describe("images the process node runs", () => {
  test("image names are read as container runtimes read them", () => {
    assert.equal(imageRepository("jmalloc/echo-server"), "docker.io/jmalloc/echo-server");
    assert.equal(imageRepository("jmalloc/echo-server:v0.3.7"), "docker.io/jmalloc/echo-server");
    assert.equal(imageRepository("busybox"), "docker.io/library/busybox");
    assert.equal(
      imageRepository("index.docker.io/jmalloc/echo-server@sha256:ab"),
      "docker.io/jmalloc/echo-server",
    );
    assert.equal(imageRepository("localhost:5000/pause:1"), "localhost:5000/pause");
    assert.equal(
      imageRepository("quay.io/jupyter/base-notebook:2025-03-14"),
      "quay.io/jupyter/base-notebook",
    );
  });

  test("every LOCAL_IMAGES entry is known, any tag of its repository too, anything else is not", () => {
    for (const [kind, image] of Object.entries(LOCAL_IMAGES)) assert.equal(imageKind(image), kind);
    assert.equal(imageKind("jmalloc/echo-server:latest"), "echo");
    assert.equal(imageKind("registry.k8s.io/pause:3.9"), "pause");
    assert.equal(imageKind("jupyter/minimal-notebook"), "jupyter");
    assert.equal(imageKind("nginx:1.27"), undefined);
    const message = unknownImageMessage("nginx:1.27");
    assert.match(message, /cannot run image "nginx:1.27"/);
    for (const image of Object.values(LOCAL_IMAGES)) assert.ok(message.includes(image), image);
  });

  test("pull policy defaults as the API server does", () => {
    assert.equal(pullPolicy("a/b:1", undefined), "IfNotPresent");
    assert.equal(pullPolicy("a/b", undefined), "Always");
    assert.equal(pullPolicy("a/b:latest", undefined), "Always");
    assert.equal(pullPolicy("a/b@sha256:00", undefined), "IfNotPresent");
    assert.equal(pullPolicy("a/b:1", "Never"), "Never");
  });

  test("command replaces the entrypoint and drops the default command; args replace the default command", () => {
    assert.deepEqual(containerProgram("jupyter"), { program: "jupyter", args: [] });
    assert.deepEqual(
      containerProgram("jupyter", undefined, ["start-notebook.py", "--ServerApp.base_url=/r/x/"]),
      {
        program: "jupyter",
        args: ["--ServerApp.base_url=/r/x/"],
      },
    );
    assert.deepEqual(containerProgram("jupyter", ["jupyter", "server"], ["--port=9000"]), {
      program: "jupyter",
      args: ["--port=9000"],
    });
    // JupyterHub's single-user server: KubeSpawner's command, or the images' start script for it.
    assert.deepEqual(containerProgram("jupyter", ["/usr/local/bin/start-singleuser.sh", "--ip=0.0.0.0"]), {
      program: "jupyter",
      args: ["--ip=0.0.0.0"],
      singleuser: true,
    });
    assert.deepEqual(containerProgram("jupyter", ["jupyterhub-singleuser"], ["--port=8888"]), {
      program: "jupyter",
      args: ["--port=8888"],
      singleuser: true,
    });
    // Only flags: what the start script would have been given.
    assert.deepEqual(containerProgram("jupyter", undefined, ["--ServerApp.token=t"]), {
      program: "jupyter",
      args: ["--ServerApp.token=t"],
    });
    assert.deepEqual(containerProgram("echo"), { program: "echo" });
    assert.deepEqual(containerProgram("echo", undefined, ["ignored"]), { program: "echo" });
    assert.deepEqual(containerProgram("pause"), { program: "sleep" });
    assert.deepEqual(containerProgram("jupyter", ["true"]), { program: "exit", code: 0 });
    assert.deepEqual(containerProgram("echo", ["/bin/false"]), { program: "exit", code: 1 });
    assert.deepEqual(containerProgram("pause", ["sleep", "5"]), { program: "sleep", seconds: 5 });
  });

  test("a program the image does not have is not found, naming the ones it has", () => {
    const result = containerProgram("echo", ["sh", "-c", "echo hi"]);
    assert.equal(result.program, "not-found");
    assert.match(
      (result as { message: string }).message,
      /^exec: "sh": executable file not found in \$PATH \(the process node runs these programs of docker.io\/jmalloc\/echo-server: true, false, sleep, echo-server\)$/,
    );
  });

  test("container paths map through the deepest mount", () => {
    const mounts = new Map([
      ["/home/jovyan", "/data/home"],
      ["/home/jovyan/work", "/data/pvc"],
    ]);
    assert.equal(hostPathOf("/home/jovyan/work/a.txt", mounts), "/data/pvc/a.txt");
    assert.equal(hostPathOf("/home/jovyan/work/", mounts), "/data/pvc");
    assert.equal(hostPathOf("/home/jovyan/.local", mounts), "/data/home/.local");
    assert.equal(hostPathOf("/home/jovyanx", mounts), undefined);
    assert.equal(hostPathOf("/etc", mounts), undefined);
  });

  test("jupyter-server listens on the pod's address, in its mapped root, and keeps every other argument", () => {
    const mounts = new Map([["/home/jovyan/work", "/data/pvc"]]);
    const args = jupyterServerArgs(
      [
        "--ServerApp.base_url=/r/t/",
        "--ip",
        "0.0.0.0",
        "--ServerApp.root_dir=/home/jovyan/work",
        "--port=9000",
      ],
      { ip: "127.81.0.7", defaultRoot: "/pods/x/home", mounts, allowRoot: true },
    );
    assert.deepEqual(args, [
      "--ServerApp.base_url=/r/t/",
      "--port=9000",
      "--ServerApp.ip=127.81.0.7",
      "--ServerApp.root_dir=/data/pvc",
      "--ServerApp.open_browser=False",
      "--ServerApp.port_retries=0",
      "--ServerApp.allow_root=True",
    ]);
    const unmapped = jupyterServerArgs(["--notebook-dir=/srv"], {
      ip: "127.81.0.7",
      defaultRoot: "/pods/x/home",
      mounts,
      allowRoot: false,
    });
    assert.ok(unmapped.includes("--ServerApp.root_dir=/pods/x/home"));
    assert.ok(!unmapped.some((a) => a.includes("allow_root")));
  });

  test("the backup agent runs with its arguments, its --dir and --token-file mapped through the mounts", () => {
    assert.deepEqual(containerProgram("backupAgent", undefined, ["backup", "--dir", "/data", "--key", "k"]), {
      program: "backup-agent",
      args: ["backup", "--dir", "/data", "--key", "k"],
    });
    const mounts = new Map([["/data", "/volumes/pvc-1"]]);
    assert.deepEqual(backupAgentArgs(["restore", "--dir", "/data/sub", "--key", "/data"], mounts), [
      "restore",
      "--dir",
      "/volumes/pvc-1/sub",
      "--key",
      "/data",
    ]);
    assert.deepEqual(backupAgentArgs(["backup", "--dir=/data"], mounts), ["backup", "--dir=/volumes/pvc-1"]);
    const withToken = new Map([...mounts, ["/var/run/secrets/agent", "/pods/u1/volumes/token"]]);
    assert.deepEqual(
      backupAgentArgs(["backup", "--token-file", "/var/run/secrets/agent/token", "--key", "k"], withToken),
      ["backup", "--token-file", "/pods/u1/volumes/token/token", "--key", "k"],
    );
  });

  test("busybox runs a shell: its script path is mapped through the mounts, options and inline scripts are not", () => {
    // local-path-provisioner's helper pod: command /bin/sh /script/setup, args -p <dir> -s <bytes> -m <mode> -a create.
    const program = containerProgram(
      "busybox",
      ["/bin/sh", "/script/setup"],
      ["-p", "/opt/lpp/pvc-1", "-s", "1024"],
    );
    assert.deepEqual(program, {
      program: "shell",
      args: ["/script/setup", "-p", "/opt/lpp/pvc-1", "-s", "1024"],
    });
    const mounts = new Map([
      ["/script", "/pods/u1/volumes/script"],
      ["/opt/lpp", "/opt/lpp"],
    ]);
    assert.deepEqual(shellArgs((program as { args: string[] }).args, mounts), [
      "/pods/u1/volumes/script/setup",
      "-p",
      "/opt/lpp/pvc-1",
      "-s",
      "1024",
    ]);
    assert.deepEqual(shellArgs(["-c", "mkdir -p /data/x", "/elsewhere"], mounts), [
      "-c",
      "mkdir -p /data/x",
      "/elsewhere",
    ]);
    assert.deepEqual(containerProgram("busybox"), { program: "shell", args: [] });
    assert.deepEqual(containerProgram("busybox", ["sleep", "5"]), { program: "sleep", seconds: 5 });
    assert.equal(containerProgram("busybox", ["mkdir", "/x"]).program, "not-found");
  });
});
