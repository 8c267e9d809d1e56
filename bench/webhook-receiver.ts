// The local receiver of bench/webhooks.ts, in its own process: answers 204, counts requests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    count++;
    res.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('message', () => process.send!({ count }));
