import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

/** A certificate and its key as files, and the certificate's serial as openssl prints it. */
export interface IssuedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
  readonly serial: string;
}

export interface IssueOptions {
  /** The subject's CN; the names below go in subjectAltName. */
  readonly commonName: string;
  /** DNS names and IP addresses the certificate is for (server certificates). */
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** A client certificate (extendedKeyUsage clientAuth) instead of a server one. */
  readonly client?: boolean;
  /**
   * A server certificate that is also a client one (serverAuth and clientAuth): a Redis
   * node's, which it presents to its peers too; the Cluster bus asks for one whatever
   * tls-auth-clients says.
   */
  readonly peer?: boolean;
  /** Validity as openssl's YYYYMMDDHHMMSSZ; by default from an hour ago for a year. */
  readonly startDate?: string;
  readonly endDate?: string;
  /** The leaf's key: P-256 by default; RSA for the suites with RSA key exchange or signatures. */
  readonly keyAlgorithm?: 'EC' | 'RSA';
}

/** A private CA in a temporary folder, made with the openssl CLI, that issues certificates. */
export interface TestCa {
  readonly dir: string;
  /** The CA certificate's file (what a client trusts: caFile, curl --cacert). */
  readonly certFile: string;
  readonly cert: string;
  issue(name: string, options: IssueOptions): IssuedCertificate;
  /** A key that matches no certificate (a pair mixed up at rotation). */
  strayKey(name: string): string;
  /** Removes the folder and everything issued in it. */
  remove(): void;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function opensslDate(ms: number): string {
  return `${new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

function newKey(dir: string, file: string, algorithm: 'EC' | 'RSA' = 'EC'): void {
  const parameters =
    algorithm === 'EC'
      ? ['-pkeyopt', 'ec_paramgen_curve:P-256']
      : ['-pkeyopt', 'rsa_keygen_bits:2048'];
  openssl(['genpkey', '-algorithm', algorithm, ...parameters, '-out', file], dir);
}

/**
 * Makes a CA. Leaf certificates are signed with `openssl ca`, which takes any start and end
 * date (an expired certificate, one not valid yet) where `openssl x509 -days` takes a
 * positive number of days only.
 */
export function createTestCa(name = 'Test CA'): TestCa {
  const dir = tempDir('gateway-tls-');
  newKey(dir, 'ca.key');
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-subj',
      `/CN=${name}`,
      '-days',
      '3650',
      '-out',
      'ca.pem',
    ],
    dir,
  );
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '1000\n');
  writeFileSync(
    join(dir, 'ca.cnf'),
    [
      '[ca]',
      'default_ca = test_ca',
      '[test_ca]',
      `database = ${join(dir, 'index.txt')}`,
      `new_certs_dir = ${dir}`,
      `serial = ${join(dir, 'serial')}`,
      'default_md = sha256',
      'policy = any_policy',
      'unique_subject = no',
      '[any_policy]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  const certFile = join(dir, 'ca.pem');
  return {
    dir,
    certFile,
    cert: readFileSync(certFile, 'utf8'),
    issue(leaf, options) {
      const keyFile = join(dir, `${leaf}.key`);
      const cert = join(dir, `${leaf}.pem`);
      newKey(dir, keyFile, options.keyAlgorithm);
      openssl(
        [
          'req',
          '-new',
          '-key',
          keyFile,
          '-subj',
          `/CN=${options.commonName}`,
          '-out',
          `${leaf}.csr`,
        ],
        dir,
      );
      const names = [
        ...(options.dnsNames ?? []).map((n) => `DNS:${n}`),
        ...(options.ipAddresses ?? []).map((ip) => `IP:${ip}`),
      ];
      writeFileSync(
        join(dir, `${leaf}.ext`),
        [
          '[leaf]',
          'basicConstraints = CA:FALSE',
          `extendedKeyUsage = ${extendedKeyUsage(options)}`,
          ...(names.length > 0 ? [`subjectAltName = ${names.join(',')}`] : []),
          '',
        ].join('\n'),
      );
      const now = Date.now();
      openssl(
        [
          'ca',
          '-batch',
          '-notext',
          '-config',
          'ca.cnf',
          '-cert',
          'ca.pem',
          '-keyfile',
          'ca.key',
          '-in',
          `${leaf}.csr`,
          '-out',
          cert,
          '-extfile',
          `${leaf}.ext`,
          '-extensions',
          'leaf',
          '-startdate',
          options.startDate ?? opensslDate(now - 3_600_000),
          '-enddate',
          options.endDate ?? opensslDate(now + 365 * 86_400_000),
        ],
        dir,
      );
      const pem = readFileSync(cert, 'utf8');
      const serial = execFileSync('openssl', ['x509', '-in', cert, '-noout', '-serial'], {
        encoding: 'utf8',
      })
        .trim()
        .replace(/^serial=/, '');
      return { certFile: cert, keyFile, cert: pem, key: readFileSync(keyFile, 'utf8'), serial };
    },
    strayKey(leaf) {
      const keyFile = join(dir, `${leaf}.key`);
      newKey(dir, keyFile);
      return keyFile;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function extendedKeyUsage(options: IssueOptions): string {
  if (options.client === true) return 'clientAuth';
  return options.peer === true ? 'serverAuth,clientAuth' : 'serverAuth';
}

/** A server certificate for the loopback names the tests connect to. */
export const LOOPBACK: Pick<IssueOptions, 'dnsNames' | 'ipAddresses'> = {
  dnsNames: ['localhost'],
  ipAddresses: ['127.0.0.1'],
};
