/**
 * The embedded stack's ports (emulator/stack.ts). A CI run once read its run from the KMS
 * endpoint of another test: DynamoDB Local was told a port picked by `listen(0)`, another server's
 * `listen(0)` got the same port before the JVM bound it, and start-up took that server's 400 for
 * DynamoDB being ready. Start-up now counts only DynamoDB's own answer, and the port it picks for
 * the JVM is one no `listen(0)` is handed.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type net from 'node:net';
import { cpus } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { childPort, waitForDynamo } from '../../../emulator/stack.js';

let foreign: http.Server;
let foreignEndpoint: string;

beforeAll(async () => {
  // Answers every POST as the KMS emulator does a DynamoDB target: HTTP 400 with a JSON error.
  foreign = http.createServer((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
    res.end(
      JSON.stringify({ __type: 'UnknownOperationException', message: 'X-Amz-Target must be TrentService.<Operation>' }),
    );
  });
  await new Promise<void>((r) => foreign.listen(0, '127.0.0.1', () => r()));
  foreignEndpoint = `http://127.0.0.1:${(foreign.address() as net.AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => foreign.close(() => r())));

it('another server answering on the port is not taken for DynamoDB Local being ready', async () => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    await expect(waitForDynamo(foreignEndpoint, child, 1500, () => '')).rejects.toThrow(/did not answer/);
  } finally {
    child.kill('SIGKILL');
  }
});

it('a java child that exits while another server holds its port is reported with its output', async () => {
  const child = spawn(
    process.execPath,
    ['-e', 'console.error("java.net.BindException: Address already in use"); process.exit(1)'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  await expect(waitForDynamo(foreignEndpoint, child, 10_000, () => err)).rejects.toThrow(
    /exited with code 1.*\n.*BindException/s,
  );
});

it('the port picked for the java child is free and never one a listen(0) is handed', async () => {
  const picked = await Promise.all(Array.from({ length: 20 }, () => childPort()));
  const ephemeral = await Promise.all(
    Array.from({ length: Math.max(20, cpus().length * 10) }, async () => {
      const s = http.createServer();
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
      const { port } = s.address() as net.AddressInfo;
      await new Promise<void>((r) => s.close(() => r()));
      return port;
    }),
  );
  for (const p of picked) {
    expect(p).toBeGreaterThanOrEqual(20_000);
    expect(p).toBeLessThan(32_000);
  }
  expect(ephemeral.filter((p) => picked.includes(p))).toEqual([]);
});
