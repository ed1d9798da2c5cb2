import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module.js';
import { loadConfig } from '../core/config/config.js';
import { API_PREFIX } from '../core/http/configure-app.js';
import { buildOpenApiDocument } from './openapi.js';

// Writes the OpenAPI document (`node dist/openapi/write-openapi.js <file>`) for linting. Preview mode
// builds the module graph without instantiating providers, so no Postgres or Redis is needed.
const file = process.argv[2] ?? 'openapi.json';
const app = await NestFactory.create(AppModule.forRoot(loadConfig({ WORKER_ENABLED: 'false' })), {
  preview: true,
  logger: false,
});
writeFileSync(file, `${JSON.stringify(buildOpenApiDocument(app, API_PREFIX), null, 2)}\n`);
await app.close();
