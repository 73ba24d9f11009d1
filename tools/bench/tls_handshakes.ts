// Run by https_handshake_bench.ts inside a lab Machine's network namespace: `count` full TLS handshakes (a new
// connection each, no session resumption) to HOST:PORT with SNI NAME, verified against CA; prints the milliseconds
// the handshakes took, one after another.
import { readFileSync } from "node:fs";
import { connect } from "node:tls";

const [host, port, name, count, caPath] = Deno.args;
const ca = readFileSync(caPath, "utf8");

function handshake(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port: Number(port), servername: name, ca }, () => {
      socket.destroy();
      resolve();
    });
    socket.once("error", reject);
  });
}

const started = performance.now();
for (let i = 0; i < Number(count); i++) await handshake();
console.log((performance.now() - started).toFixed(1));
