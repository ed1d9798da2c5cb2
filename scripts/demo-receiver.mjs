// A local webhook receiver that verifies Standard Webhooks signatures and prints each delivery.
// Usage: WEBHOOK_SECRET=whsec_... node scripts/demo-receiver.mjs   (listens on PORT, default 4000)
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.WEBHOOK_SECRET);
const port = Number(process.env.PORT ?? 4000);

createServer((req, res) => {
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
}).listen(port, () => console.log(`Receiver on http://127.0.0.1:${port}/hook`));
