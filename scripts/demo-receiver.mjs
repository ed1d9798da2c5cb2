// A local webhook receiver that verifies Standard Webhooks signatures and prints each delivery.
// Usage: WEBHOOK_SECRET=whsec_... node scripts/demo-receiver.mjs [--once]
// Listens on RECEIVER_PORT (default 4000; never PORT, which is the api's). A GET answers 200, so a
// script can wait until it listens: until curl -sf http://127.0.0.1:4000/; do sleep 0.2; done
// Without WEBHOOK_SECRET it prints deliveries unverified; with --once it exits after the first one.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const secret = process.env.WEBHOOK_SECRET;
const webhook = secret ? new Webhook(secret) : null;
const port = Number(process.env.RECEIVER_PORT || 4000);
const once = process.argv.includes('--once');

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('listening\n');
    return;
  }
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    try {
      // verify throws on a bad signature or a stale timestamp
      const event = webhook ? webhook.verify(body, req.headers) : JSON.parse(body);
      const label = webhook ? 'verified' : 'received (not verified: no WEBHOOK_SECRET)';
      console.log(`${label} ${req.headers['webhook-id']}: ${JSON.stringify(event)}`);
      res.writeHead(204).end();
      // The sender keeps its connection alive: close it too, or the server would wait for it.
      if (once) {
        res.on('finish', () => {
          server.close();
          server.closeAllConnections();
        });
      }
    } catch (error) {
      console.log(`rejected: ${error.message}`);
      res.writeHead(400).end();
    }
  });
});
server.listen(port, '127.0.0.1', () => console.log(`Receiver on http://127.0.0.1:${port}/hook`));
