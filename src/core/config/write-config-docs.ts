import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { CONFIG_DOC_FILES, renderConfigReference, renderEnvExample } from './config-reference.js';

// `npm run docs:config`: rewrites the configuration reference and .env.example from the code.
writeFileSync(CONFIG_DOC_FILES.reference, renderConfigReference());
writeFileSync(CONFIG_DOC_FILES.example, renderEnvExample());
process.stdout.write(`Wrote ${CONFIG_DOC_FILES.reference} and ${CONFIG_DOC_FILES.example}\n`);
