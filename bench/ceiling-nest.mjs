// Ceiling for the HTTP figures: a bare NestJS + Express app, one controller answering a constant JSON body.
// Plain JS, so Nest's decorators are applied as functions. Run as its own process by bench/run.mjs.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import process from 'node:process';

// About the size and shape of GET /me's body.
const BODY = {
  id: 'tz4a98xxat96iws9zmbrgj3a',
  name: 'bench',
  createdAt: '2024-01-15T10:30:00.000Z',
  updatedAt: '2024-01-15T10:30:00.000Z',
};

class ConstantController {
  get() {
    return BODY;
  }
}
Controller('api/v1')(ConstantController);
Get('constant')(
  ConstantController.prototype,
  'get',
  Object.getOwnPropertyDescriptor(ConstantController.prototype, 'get'),
);

class CeilingModule {}
Module({ controllers: [ConstantController] })(CeilingModule);

const app = await NestFactory.create(CeilingModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT), '127.0.0.1');
