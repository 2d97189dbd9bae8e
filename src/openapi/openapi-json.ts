import { buildOpenApiDocument } from './build-openapi-document.js';

let text: string | undefined;

/**
 * The document as committed at docs/openapi.json, served at `GET /openapi.json` and printed
 * by `accounts-gateway openapi`: one spelling, built once per process.
 */
export function openApiJson(): string {
  text ??= `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
  return text;
}
