import { missingOutput, parseWalkthrough } from './walkthroughs.js';

describe('parseWalkthrough', () => {
  it('takes sh, bash and shell blocks in order with the output stated after each, and skips the rest', () => {
    const page = [
      '# A page',
      '```sh',
      'echo one',
      '```',
      '',
      '```output',
      'one',
      '```',
      '```sh no-run',
      'docker compose up',
      '```',
      '```ts',
      'console.log(1);',
      '```',
      '```bash',
      'echo two',
      'echo three',
      '```',
    ].join('\n');
    expect(parseWalkthrough(page, 'page.md').blocks).toEqual([
      { line: 2, code: 'echo one', expected: ['one'] },
      { line: 15, code: 'echo two\necho three', expected: null },
    ]);
  });

  it('refuses an output block that follows prose or a block that is not run', () => {
    expect(() => parseWalkthrough('```sh\necho\n```\nText.\n```output\nx\n```', 'a.md')).toThrow(
      'a.md:5: an output block must follow a run block',
    );
    expect(() => parseWalkthrough('```sh no-run\necho\n```\n```output\nx\n```', 'b.md')).toThrow(
      'b.md:4: an output block must follow a run block',
    );
    expect(() => parseWalkthrough('```sh\necho\n', 'c.md')).toThrow('c.md:1: a code block is never closed');
  });
});

describe('missingOutput', () => {
  const output = '{"data":{"id":"abc","status":"succeeded"}}\nnoise\n200\n';

  it('accepts lines found in order, other lines between, with ... for any text', () => {
    expect(missingOutput(['{"data":{"id":"...","status":"succeeded"}}', '200'], output)).toBeNull();
    expect(missingOutput([], output)).toBeNull();
  });

  it('names the first line that is absent, out of order, or only part of a line', () => {
    expect(missingOutput(['200', '{"data":...}'], output)).toBe('{"data":...}');
    expect(missingOutput(['{"data":{"id":"...","status":"failed"}}'], output)).toBe(
      '{"data":{"id":"...","status":"failed"}}',
    );
    expect(missingOutput(['20'], output)).toBe('20');
    expect(missingOutput(['nois.'], output)).toBe('nois.');
  });
});
