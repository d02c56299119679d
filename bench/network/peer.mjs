// The network benchmark's two ends, the same program on both sides (run with node):
//   node peer.mjs serve PORT HOST                — answers: "T<bytes>\n" streams that many bytes,
//                                                  "L" echoes every 64-byte message back
//   node peer.mjs throughput HOST PORT BYTES     — prints MiB/s of one transfer
//   node peer.mjs latency HOST PORT COUNT        — prints the round trips (µs) of COUNT 64-byte messages
//   node peer.mjs resolve-and-answer NAME DNS PORT TIMEOUT_MS — polls until NAME resolves through DNS
//                                                  and its address answers on PORT; prints when (epoch ms)
import { Resolver } from "node:dns/promises";
import { connect, createServer } from "node:net";

const [mode, a, b, c, d] = process.argv.slice(2);
const MESSAGE = 64;

if (mode === "serve") {
  const chunk = Buffer.alloc(1 << 20, 7);
  createServer((socket) => {
    socket.setNoDelay(true);
    socket.once("data", (first) => {
      if (first[0] === 84) {
        let left = Number(first.subarray(1).toString().trim());
        const write = () => {
          while (left > 0) {
            const n = Math.min(left, chunk.length);
            left -= n;
            if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
              return socket.once("drain", write);
          }
          socket.end();
        };
        write();
      } else {
        socket.write(first.subarray(1));
        socket.pipe(socket);
      }
    });
  }).listen(Number(a), b ?? "0.0.0.0");
} else if (mode === "throughput") {
  const bytes = Number(c);
  const socket = connect({ host: a, port: Number(b) });
  let got = 0;
  let started = 0;
  socket.on("connect", () => {
    started = performance.now();
    socket.write(`T${bytes}\n`);
  });
  socket.on("data", (data) => {
    got += data.length;
  });
  socket.on("end", () => {
    const seconds = (performance.now() - started) / 1000;
    console.log(JSON.stringify({ bytes: got, mibPerSecond: got / 1048576 / seconds }));
  });
} else if (mode === "latency") {
  const count = Number(c);
  const socket = connect({ host: a, port: Number(b) });
  socket.setNoDelay(true);
  const message = Buffer.alloc(MESSAGE, 1);
  const times = [];
  let pending = 0;
  let sent = 0;
  const send = () => {
    sent = performance.now();
    pending = MESSAGE;
    socket.write(message);
  };
  socket.on("connect", () => {
    socket.write(Buffer.from("L"));
    send();
  });
  socket.on("data", (data) => {
    pending -= data.length;
    if (pending > 0) return;
    times.push(Math.round((performance.now() - sent) * 1000));
    if (times.length === count) {
      console.log(JSON.stringify({ roundTripsMicros: times }));
      socket.destroy();
    } else send();
  });
} else if (mode === "resolve-and-answer") {
  const resolver = new Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([b]);
  const deadline = performance.now() + Number(d);
  const answers = (host) =>
    new Promise((resolve) => {
      const socket = connect({ host, port: Number(c) });
      socket.setTimeout(500, () => socket.destroy());
      socket.on("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
      socket.on("close", () => resolve(false));
    });
  for (;;) {
    const [address] = await resolver.resolve4(a).catch(() => []);
    if (address && (await answers(address))) {
      console.log(JSON.stringify({ at: Date.now() }));
      break;
    }
    if (performance.now() > deadline) {
      console.log(JSON.stringify({ at: null }));
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
