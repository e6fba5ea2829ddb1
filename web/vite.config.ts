import preact from "@preact/preset-vite";
import { defineConfig } from "vitest/config";

// The gateway serves dist/ at / (services/gateway/src/chips_gateway/webapp.py). In
// development, `npm run dev` proxies the API and the socket to a gateway on :8080.
export default defineConfig({
  plugins: [preact()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
    modulePreload: { polyfill: false },
    // The service worker (src/sw.ts) is built beside the page at /sw.js, unhashed: its
    // scope is the app's, and a browser checks that one address for a new version.
    rollupOptions: {
      input: { index: "index.html", sw: "src/sw.ts" },
      output: { entryFileNames: (chunk) => (chunk.name === "sw" ? "sw.js" : "assets/[name]-[hash].js") },
    },
  },
  server: {
    proxy: {
      "/v1": { target: "http://127.0.0.1:8080", ws: true },
    },
  },
  test: { environment: "node", include: ["src/**/*.test.ts", "packages/*/test/**/*.test.ts"] },
});
