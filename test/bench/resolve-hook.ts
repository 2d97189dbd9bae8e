// Lets Node run the bench's TypeScript as the repository writes it (imports end in `.js`, as
// tsc's NodeNext wants) by type stripping alone, without a build step for test/:
//   - a relative `./x.js` under test/ that does not exist is loaded as `./x.ts`;
//   - a module of src/ is loaded from dist/ (what `npm run build` made just before), so the
//     bench measures the built gateway and tsc still checks the bench against src/ types.
// The entry (run-bench.ts) registers it before importing anything else; child entries get it
// with `node --import <this file>`.
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';

const root = new URL('../../', import.meta.url).href;
const src = `${root}src/`;
const dist = `${root}dist/`;
const test = `${root}test/`;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const parent = context.parentURL;
    if (
      parent?.startsWith(test) === true &&
      (specifier.startsWith('./') || specifier.startsWith('../')) &&
      specifier.endsWith('.js')
    ) {
      const url = new URL(specifier, parent);
      if (url.href.startsWith(src)) return nextResolve(dist + url.href.slice(src.length), context);
      if (!existsSync(url)) return nextResolve(url.href.replace(/\.js$/, '.ts'), context);
    }
    return nextResolve(specifier, context);
  },
});
