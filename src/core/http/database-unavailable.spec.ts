import { isDatabaseUnavailable } from './database-unavailable.js';

const pgError = (code: string, message = 'error') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['refused connection', pgError('ECONNREFUSED')],
    ['too many clients (53300)', pgError('53300', 'sorry, too many clients already')],
    ['admin shutdown (57P01)', pgError('57P01')],
    ['starting up (57P03)', pgError('57P03')],
    ['connection exception class 08', pgError('08006')],
    ['TypeORM-wrapped driver error', Object.assign(new Error('query failed'), { driverError: { code: '57P01' } })],
    ['pool timeout', new Error('timeout exceeded when trying to connect')],
    ['terminated connection', new Error('Connection terminated unexpectedly')],
  ])('is true for %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation (23505)', pgError('23505')],
    ['a syntax error (42601)', pgError('42601')],
    ['a plain bug', new TypeError('x is undefined')],
    ['a non-error', 'boom'],
  ])('is false for %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
