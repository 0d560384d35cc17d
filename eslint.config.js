// ESLint for the browser modules (web/static/js, served to Chromium as ES modules) and
// their unit tests (tests/js, run by node --test). `make lint` runs it (Makefile).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/", ".venv/", ".typecheck/", ".onsale/", "build/", "dist/",
              "web/static/vendor/",  // third-party files, vendored as published
              "e2e/artifacts/"] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: "module" },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-use-before-define": ["error", { functions: false, classes: false, variables: false }],
      "prefer-const": "error",
      "no-var": "error",
      "no-shadow": "error",
      "no-implicit-coercion": ["error", { allow: ["!!"] }],
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "all" }],
      "array-callback-return": "error",
      "no-constructor-return": "error",
      "no-promise-executor-return": "error",
      "no-self-compare": "error",
      "no-template-curly-in-string": "error",
      "no-unmodified-loop-condition": "error",
      "no-unreachable-loop": "error",
      "no-throw-literal": "error",
      "no-return-assign": "error",
      "no-new-wrappers": "error",
      "no-useless-concat": "error",
      "no-useless-return": "error",
      "no-lonely-if": "error",
      "no-else-return": "error",
      "no-unused-expressions": "error",
      "no-loop-func": "error",
      "default-case-last": "error",
      "prefer-promise-reject-errors": "error",
      "no-param-reassign": "error",
    },
  },
  {
    files: ["web/static/js/**/*.js"],
    languageOptions: { globals: globals.browser },
    rules: {
      // One import style: a module imports its siblings as ./name.js, which the browser
      // resolves against the module's own URL (/static/js/) and Node against its file.
      "no-restricted-imports": ["error", { patterns: [{
        regex: "^(?!\\./[\\w.]+\\.js$)",
        message: "Import a sibling module as ./name.js (one import style, docs/design.md).",
      }] }],
    },
  },
  {
    files: ["tests/js/**/*.js", "eslint.config.js"],
    languageOptions: { globals: globals.node },
  },
];
