// A local webhook receiver that verifies Standard Webhooks signatures and prints each delivery.
// Usage: WEBHOOK_SECRET=whsec_... node scripts/demo-receiver.mjs
// Listens on RECEIVER_PORT (default 4000; never PORT, which is the api's). A GET answers 200, so a
// script can wait until it listens: until curl -sf http://127.0.0.1:4000/; do sleep 0.2; done
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.WEBHOOK_SECRET);
const port = Number(process.env.RECEIVER_PORT || 4000);

createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('listening\n');
    return;
  }
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    try {
      const event = webhook.verify(body, req.headers); // throws on a bad signature or a stale timestamp
      console.log(`verified ${req.headers['webhook-id']}:`, JSON.stringify(event));
      res.writeHead(204).end();
    } catch (error) {
      console.log(`rejected: ${error.message}`);
      res.writeHead(400).end();
    }
  });
}).listen(port, '127.0.0.1', () => console.log(`Receiver on http://127.0.0.1:${port}/hook`));
