import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';

// config/kubernetes/ as `kubectl apply -k` sends it: the kustomization's resources, its
// generated ConfigMap, its namespace and image. kustomize itself is a Go program with no npm
// package: renderKustomization does what this kustomization asks of it, and where kubectl is
// installed a test holds the two renderings equal (test/unit/config/kubernetes-manifests).

export const KUBERNETES_DIR = fileURLToPath(new URL('../../config/kubernetes/', import.meta.url));

/** A Kubernetes object as written: its type, its name, and whatever else its kind has. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly [field: string]: unknown;
}

/** The parts of kustomization.yaml this folder uses. */
export interface Kustomization {
  readonly namespace: string;
  readonly resources: readonly string[];
  readonly configMapGenerator: readonly {
    readonly name: string;
    readonly files: readonly string[];
  }[];
  readonly images: readonly {
    readonly name: string;
    readonly newName: string;
    readonly newTag: string;
  }[];
}

/** Kinds that belong to no namespace, among those this folder holds. */
const CLUSTER_SCOPED = new Set(['Namespace']);

export function readKustomization(dir: string = KUBERNETES_DIR): Kustomization {
  return parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

/** Every YAML document of a file, as plain data. */
export function readManifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message ?? ''}`);
    return doc.toJS() as Manifest;
  });
}

/**
 * The objects `kubectl kustomize` makes of the folder, but for the hash kustomize appends to
 * a generated ConfigMap's name (and to the references to it).
 */
export function renderKustomization(dir: string = KUBERNETES_DIR): Manifest[] {
  const kustomization = readKustomization(dir);
  const objects: Manifest[] = kustomization.resources.flatMap((file) =>
    readManifests(join(dir, file)),
  );
  for (const generator of kustomization.configMapGenerator) {
    const data = Object.fromEntries(
      generator.files.map((file) => [basename(file), readFileSync(join(dir, file), 'utf8')]),
    );
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data });
  }
  return objects.map((object) => {
    const namespaced = CLUSTER_SCOPED.has(object.kind)
      ? object
      : { ...object, metadata: { ...object.metadata, namespace: kustomization.namespace } };
    return withImages(namespaced, kustomization.images);
  });
}

/** The object with each container image the kustomization renames given its new name and tag. */
function withImages(object: Manifest, images: Kustomization['images']): Manifest {
  if (object.kind !== 'Deployment') return object;
  const text = JSON.stringify(object, (key, value: unknown) => {
    if (key !== 'image' || typeof value !== 'string') return value;
    const image = images.find((entry) => value.split(':')[0] === entry.name);
    return image === undefined ? value : `${image.newName}:${image.newTag}`;
  });
  return JSON.parse(text) as Manifest;
}

/**
 * What `kubectl kustomize DIR` renders, each generated ConfigMap's name without its hash
 * (and the references to it), so that it compares with renderKustomization's.
 */
export async function kubectlKustomize(kubectl: string, dir: string = KUBERNETES_DIR) {
  const { stdout } = await promisify(execFile)(kubectl, ['kustomize', dir]);
  const generated = readKustomization(dir).configMapGenerator.map((g) => g.name);
  const unhashed = (name: string) =>
    generated.find((prefix) => new RegExp(`^${prefix}-[a-z0-9]{10}$`).test(name)) ?? name;
  return parseAllDocuments(stdout).map((doc) => {
    const text = JSON.stringify(doc.toJS(), (key, value: unknown) =>
      key === 'name' && typeof value === 'string' ? unhashed(value) : value,
    );
    return JSON.parse(text) as Manifest;
  });
}

/** The one object of a kind (and name, when several share it). */
export function findManifest<T = Manifest>(
  objects: readonly Manifest[],
  kind: string,
  name?: string,
): T {
  const found = objects.filter(
    (object) => object.kind === kind && (name === undefined || object.metadata.name === name),
  );
  if (found.length !== 1) throw new Error(`${found.length} objects of kind ${kind} ${name ?? ''}`);
  return found[0] as T;
}
