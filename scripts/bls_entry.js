// The one entry point of web/static/vendor/noble_bls/bls12-381.js: noble-curves' BLS12-381
// (and the noble-hashes it imports) bundled into one ES module by esbuild, since the
// browser cannot resolve their bare imports. Rebuilt by `npm run vendor-bls`;
// tests/unit/test_vendored.py rebuilds it and requires the same bytes.
export { bls12_381 } from "@noble/curves/bls12-381.js";
