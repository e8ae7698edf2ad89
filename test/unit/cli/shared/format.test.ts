/** Pure formatting used by tail/runs/redrive/doctor: devalue previews, durations, bytes. */
import { dehydrateRunError } from '@workflow/core/serialization';
import { FatalError } from '@workflow/errors';
import { stringify } from 'devalue';
import { afterEach, describe, expect, it } from 'vitest';
import {
  decompressed,
  errorText,
  formatDuration,
  fromDevalue,
  jsonSafe,
  parseDuration,
  previewBytes,
  previewValue,
  shortName,
} from '../../../../src/cli/shared/format.js';
import { framedText } from '../../../../src/cli/tail-rows.js';

const enc = (s: string) => new TextEncoder().encode(s);
const devl = (v: unknown) => enc(`devl${stringify(v)}`);

describe('format', () => {
  it('previews devalue payloads as compact JSON of the value', () => {
    expect(previewBytes(devl(6))).toBe('6');
    expect(previewBytes(devl({ ok: true, n: [1, 2] }))).toBe('{"ok":true,"n":[1,2]}');
    expect(previewBytes(devl({ when: new Date(0), m: new Map([['a', 1]]), s: new Set([1]) }))).toBe(
      '{"when":"1970-01-01T00:00:00.000Z","m":{"Map":{"a":1}},"s":{"Set":[1]}}',
    );
    expect(previewBytes(devl(undefined))).toBe('undefined');
    // Not devalue after all: shown as the text it is.
    expect(previewBytes(enc('devl[{"orderId":42}]'))).toBe('[{"orderId":42}]');
    expect(previewBytes(enc('encr\u0001\u0002'))).toBe('<encr 6 B>');
    expect(previewBytes(new Uint8Array([0xff, 0x00, 0x10]))).toBe('0xff0010');
    expect(fromDevalue('nope')).toBeUndefined();
  });

  it('keeps pointers, bytes and dates JSON-safe', () => {
    expect(jsonSafe({ a: devl(1), p: { __s3: 'runs/x', size: 9 }, d: new Date(0), b: new Uint8Array([0xff]) })).toEqual(
      {
        a: { bytes: 7, text: 'devl[1]', value: 1 },
        p: { s3: 'runs/x', size: 9 },
        d: '1970-01-01T00:00:00.000Z',
        b: { bytes: 1, base64: '/w==' },
      },
    );
    expect(previewValue({ result: { __s3: 'runs/r/x', size: 4000 } })).toBe('result=<s3 runs/r/x 4000 B>');
  });

  describe('compressed payloads (errors with their stacks are over the 1 KiB threshold)', () => {
    const codec = process.env.WORKFLOW_COMPRESSION_CODEC;
    afterEach(() => {
      if (codec === undefined) delete process.env.WORKFLOW_COMPRESSION_CODEC;
      else process.env.WORKFLOW_COMPRESSION_CODEC = codec;
    });
    /** What the runtime stores for a failed run: core's own serializer, compression on. */
    const stored = async (err: Error, forced?: 'gzip') => {
      if (forced) process.env.WORKFLOW_COMPRESSION_CODEC = forced;
      err.stack = `${err.name}: ${err.message}\n${'    at somewhere (file:///app/workflows/order.ts:1:1)\n'.repeat(30)}`;
      return (await dehydrateRunError(err, 'wrun_x', undefined, globalThis, true)) as Uint8Array;
    };

    it('shows the name and message of a gzip-compressed error, in previews and --json', async () => {
      const bytes = await stored(new TypeError('card declined'), 'gzip');
      expect(String.fromCharCode(...bytes.subarray(0, 4))).toBe('gzip');
      expect(errorText(bytes)).toBe('TypeError: card declined');
      expect(previewBytes(bytes)).toMatch(/^\{"TypeError":\{"message":"card declined","stack":"TypeError: card/);
      expect(jsonSafe({ error: bytes })).toMatchObject({
        error: {
          bytes: bytes.byteLength,
          format: 'gzip',
          decompressed: { text: expect.stringMatching(/^devl/), value: { TypeError: { message: 'card declined' } } },
        },
      });
    });

    it('with the default codec (zstd where node:zlib has it), and under the class name', async () => {
      const bytes = await stored(new FatalError('out of stock'));
      expect(['gzip', 'zstd']).toContain(String.fromCharCode(...bytes.subarray(0, 4)));
      expect(decompressed(bytes)).toBeDefined();
      expect(errorText(bytes)).toBe('FatalError: out of stock');
    });

    it('leaves undecodable bytes as a marker', () => {
      const junk = enc('gzip not gzip at all');
      expect(decompressed(junk)).toBeUndefined();
      expect(previewBytes(junk)).toBe('<gzip 20 B>');
      expect(errorText(junk)).toBe('<gzip 20 B>');
    });
  });

  it('finds the message of a serialized error', () => {
    expect(errorText(devl({ message: 'card declined', stack: 'Error: card declined' }))).toBe('card declined');
    expect(errorText(devl({ Error: { name: 'RangeError', message: 'too far' } }))).toBe('RangeError: too far');
    expect(errorText({ message: 'boom', code: 'E1' })).toBe('E1: boom');
    expect(errorText('plain')).toBe('plain');
  });

  it('parses and prints durations', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('12h')).toBe(43_200_000);
    // A bare number has no unit anyone can agree on: a usage error showing the forms.
    expect(() => parseDuration('5')).toThrow(
      /needs a unit: 5d \(days\), 5h \(hours\), 5m \(minutes\) or 5s \(seconds\)/,
    );
    expect(() => parseDuration('0')).toThrow(/needs a unit/);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('0s')).toBe(0);
    expect(() => parseDuration('soon')).toThrow(/duration/);
    expect(() => parseDuration('5x')).toThrow(/duration/);
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(2400)).toBe('2.4s');
    expect(formatDuration(185_000)).toBe('3m05s');
    expect(formatDuration(7_380_000)).toBe('2h03m');
    expect(formatDuration(undefined)).toBe('-');
  });

  it('shortens runtime step names for narrow columns', () => {
    expect(shortName('step//./workflows/order//chargeCard')).toBe('chargeCard');
    expect(shortName('add')).toBe('add');
  });
});

describe('framedText (stream chunks written through getWritable)', () => {
  const frame = (value: unknown) => {
    const body = Buffer.concat([Buffer.from('devl'), Buffer.from(stringify(value))]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.byteLength);
    return Buffer.concat([len, body]);
  };

  it('shows a framed Uint8Array as its UTF-8 text and a string as itself, across frames', () => {
    const bytes = new Uint8Array(
      Buffer.concat([frame(new TextEncoder().encode('Lisbon: 15 °C\n')), frame('and more')]),
    );
    expect(framedText(bytes)).toBe('Lisbon: 15 °C\nand more');
  });

  it('leaves unframed bytes to the caller', () => {
    expect(framedText(new TextEncoder().encode('plain text chunk'))).toBeUndefined();
    expect(framedText(new Uint8Array([0, 0, 0, 9, 1, 2]))).toBeUndefined();
  });
});
