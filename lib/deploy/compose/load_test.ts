import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ComposeError, formatIssue } from "./issue.ts";
import { loadCompose } from "./load.ts";
import { loadText, onlyIssue, problems } from "./test_helpers.ts";

const SHOP = fileURLToPath(new URL("./testdata/shop/compose.yaml", import.meta.url));

Deno.test("loadCompose() reads the shop fixture with every supported key", () => {
  const { project, warnings } = loadCompose({ path: SHOP, env: { DB_PASSWORD: "s3cret", WEB_TAG: "2.0.0" } });
  assert.deepEqual(warnings, []);
  assert.equal(project.name, "shop");
  assert.equal(project.context, "production");
  assert.deepEqual(Object.keys(project.services), ["cache", "db", "web"]);
  const web = project.services.web;
  assert.equal(web.image, "ghcr.io/acme/shop-web:2.0.0");
  assert.deepEqual(web.command, ["node", "server.js", "--port", "8080"]);
  assert.deepEqual(web.entrypoint, ["/usr/local/bin/docker-entrypoint.sh"]);
  assert.deepEqual(web.environment, {
    DATABASE_URL: "postgres://shop:s3cret@db:5432/shop",
    GREETING: "Hello\nworld",
    LITERAL: "${NOT_INTERPOLATED}",
    LOG_LEVEL: "info",
    NODE_ENV: "production",
    PRICE: "$5",
  });
  assert.deepEqual(web.ports, [
    {
      kind: "ingress",
      hostname: "shop.example.com",
      loadBalancerPort: 443,
      containerPort: 8080,
      protocol: "https",
    },
    { kind: "host", hostIp: null, publishedPort: 9100, containerPort: 9100, protocol: "tcp" },
  ]);
  assert.deepEqual(web.machines, ["machine-1", "machine-2"]);
  assert.equal(web.replicas, 3);
  assert.deepEqual(web.update, { order: "start-first", monitorMs: 15000, parallelism: 2, delayMs: 5000 });
  assert.deepEqual(web.resources, {
    nanoCpus: 500_000_000,
    memoryBytes: 512 * 1024 * 1024,
    memoryReservationBytes: null,
    shmSizeBytes: null,
    ulimits: {},
  });
  assert.deepEqual(web.healthcheck, {
    kind: "configured",
    test: ["CMD", "curl", "-f", "http://localhost:8080/health"],
    intervalMs: 10_000,
    timeoutMs: 2_000,
    startPeriodMs: 90_000,
    startIntervalMs: null,
    retries: 3,
  });
  assert.deepEqual(web.dependsOn, ["cache", "db"]);
  assert.equal(web.stopGracePeriodMs, 30_000);
  assert.equal(web.stopSignal, "SIGINT");
  assert.equal(web.user, "1000:1000");
  assert.equal(web.workingDir, "/app");
  assert.equal(web.restart, "unless-stopped");
  assert.deepEqual(web.logging, { driver: "local", options: { "max-size": "10m" } });
  assert.deepEqual(web.mounts.map((mount) => mount.type), ["volume", "bind", "tmpfs"]);
  assert.deepEqual(web.preDeploy, {
    command: ["npm", "run", "migrate"],
    environment: { MIGRATE: "1" },
    privileged: null,
    timeoutMs: 300_000,
  });
  const db = project.services.db;
  assert.deepEqual(db.healthcheck.kind === "configured" && db.healthcheck.test, [
    "CMD-SHELL",
    "pg_isready -U shop",
  ]);
  assert.deepEqual(db.resources.ulimits, { nofile: { soft: 65536, hard: 65536 } });
  assert.equal(db.resources.shmSizeBytes, 256 * 1024 * 1024);
  const cache = project.services.cache;
  assert.equal(cache.mode, "global");
  assert.equal(cache.replicas, null);
  assert.deepEqual(cache.healthcheck, { kind: "disabled" });
  assert.equal(cache.caddy, 'cache.example.com {\n\trespond "ok"\n}');
  assert.deepEqual(cache.ports, [
    { kind: "host", hostIp: "10.210.0.1", publishedPort: 6379, containerPort: 6379, protocol: "tcp" },
  ]);
  assert.deepEqual(project.volumes.pgdata.sizeBytes, 20 * 1024 ** 3);
  assert.equal(project.volumes.pgdata.dockerName, "shop_pgdata");
  assert.equal(project.volumes.certs.dockerName, "acme-certs");
  assert.equal(project.volumes.certs.external, true);
});

Deno.test("loadCompose() output is plain JSON with sorted maps and survives a JSON round trip", () => {
  const { project } = loadCompose({ path: SHOP, env: { DB_PASSWORD: "x" } });
  const copy = JSON.parse(JSON.stringify(project));
  assert.deepEqual(copy, project);
  assert.deepEqual(
    Object.keys(project.services.web.environment),
    [...Object.keys(project.services.web.environment)].sort(),
  );
});

Deno.test("loadCompose() reports a missing compose file without a stack trace", () => {
  assert.throws(
    () =>
      loadCompose({
        path: "/nowhere/compose.yaml",
        env: {},
        readFile: () => {
          throw new Deno.errors.NotFound("x");
        },
      }),
    (error: unknown) =>
      error instanceof ComposeError &&
      error.message === 'Cannot load compose file "/nowhere/compose.yaml": 1 problem\n' +
          "/nowhere/compose.yaml: cannot read compose file: no such file",
  );
});

Deno.test("loadCompose() reports YAML syntax errors with line and column", () => {
  const list = problems("services:\n  web:\n    image: nginx: latest\n");
  onlyIssue(list, {
    line: 3,
    column: 12,
    path: "",
    message: /^Invalid YAML: Nested mappings are not allowed/,
  });
});

Deno.test("loadCompose() reports duplicate keys", () => {
  const list = problems("services:\n  web:\n    image: a\n    image: b\n");
  onlyIssue(list, { line: 4, column: 5, path: "services.web.image", message: /Duplicate key/ });
});

Deno.test("loadCompose() refuses replicas written as a word", () => {
  const list = problems("services:\n  web:\n    image: nginx\n    deploy:\n      replicas: three\n");
  const found = onlyIssue(list, {
    line: 5,
    column: 17,
    path: "services.web.deploy.replicas",
    message: /whole number.*"three"/,
  });
  assert.equal(
    formatIssue(found),
    '/proj/compose.yaml:5:17: services.web.deploy.replicas: expected a whole number of at least 1, got the string "three"',
  );
});

Deno.test("loadCompose() refuses a malformed image reference and pull_policy build with file:line:col", () => {
  const bad = onlyIssue(problems("services:\n  web:\n    image: shop/Web:1\n"), {
    line: 3,
    column: 12,
    path: "services.web.image",
    message: /invalid image "shop\/Web:1": repository "shop\/Web" must be lowercase/,
  });
  assert.match(formatIssue(bad), /^\/proj\/compose\.yaml:3:12: /);
  onlyIssue(problems("services:\n  web:\n    image: nginx@sha256:abc\n"), {
    line: 3,
    path: "services.web.image",
    message: /digest "sha256:abc"/,
  });
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    pull_policy: build\n"), {
    line: 4,
    column: 18,
    path: "services.web.pull_policy",
    message: /pull policy "build" needs a "build:" section/,
  });
});

Deno.test("loadCompose() refuses zero replicas", () => {
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    deploy: {replicas: 0}\n"), {
    line: 4,
    path: "services.web.deploy.replicas",
    message: /at least 1/,
  });
});

Deno.test("loadCompose() refuses a long-syntax port with a bad field", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    ports:\n      - target: http\n        published: 80\n        mode: host\n";
  onlyIssue(problems(text), {
    line: 5,
    column: 17,
    path: "services.web.ports[0].target",
    message: /invalid container port "http"/,
  });
});

Deno.test("loadCompose() refuses an unknown key in a long-syntax port", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    ports:\n      - target: 80\n        published: 80\n        mode: host\n        protocl: tcp\n";
  onlyIssue(problems(text), {
    line: 8,
    column: 9,
    path: "services.web.ports[0].protocl",
    message: /unknown key "protocl" in port: did you mean "protocol"/,
  });
});

Deno.test("loadCompose() refuses an unknown service key and suggests the close one", () => {
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    entrypont: [sh]\n"), {
    line: 4,
    column: 5,
    path: "services.web.entrypont",
    message: /unknown key "entrypont" in a service: did you mean "entrypoint"/,
  });
});

Deno.test("loadCompose() refuses an unknown top-level key but allows x- keys", () => {
  onlyIssue(
    problems("x-anything: {a: 1}\nservice:\n  web: {image: nginx}\nservices:\n  web: {image: nginx}\n"),
    {
      line: 2,
      column: 1,
      path: "service",
      message: /unknown key "service" in the top level: did you mean "services"/,
    },
  );
});

Deno.test("loadCompose() refuses an unsupported placement constraint and applies security_opt and read_only", () => {
  const text = [
    "services:",
    "  web:",
    "    image: nginx",
    "    security_opt: [no-new-privileges]",
    "    read_only: true",
    "    deploy:",
    "      placement: {constraints: [node.role==manager]}",
  ].join("\n");
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.path]), [[
    7,
    "services.web.deploy.placement.constraints[0]",
  ]]);
  assert.match(list[0].message, /unsupported placement constraint "node.role==manager"/);
  const { project } = loadText(text.split("\n").slice(0, 5).join("\n"));
  assert.equal(project.services.web.readOnly, true);
  assert.deepEqual(project.services.web.securityOpt, ["no-new-privileges"]);
});

Deno.test("loadCompose() warns about the keys it ignores and still loads", () => {
  const text = [
    "services:",
    "  web:",
    "    image: nginx",
    "    dns: [1.1.1.1]",
    "    networks: [front]",
    "    x-port: [80/http]",
    "    container_name: my-web",
    "    read_only: false",
    "    x-caddyy: ignored",
  ].join("\n");
  const { project, warnings } = loadText(text);
  assert.equal(project.services.web.image, "nginx");
  assert.deepEqual(warnings.map((item) => [item.line, item.path]), [
    [4, "services.web.dns"],
    [5, "services.web.networks"],
    [6, "services.web.x-port"],
    [7, "services.web.container_name"],
  ]);
  assert.match(warnings[2].message, /did you mean "x-ports"/);
});

Deno.test("loadCompose() does not warn about the default network", () => {
  const { warnings } = loadText(
    "services:\n  web:\n    image: nginx\n    networks: [default]\nnetworks:\n  default: {}\n",
  );
  assert.deepEqual(warnings, []);
});

Deno.test("loadCompose() refuses a short-syntax port with a non-numeric container port", () => {
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    ports: ['80:abc']\n"), {
    line: 4,
    column: 13,
    path: "services.web.ports[0]",
    message:
      /^invalid port "80:abc": invalid container port "abc".*expected \[IP:\]\[HOST:\]CONTAINER\[\/tcp\|udp\]$/,
  });
});

Deno.test("loadCompose() publishes port ranges port by port and refuses ranges of different lengths", () => {
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    ports:\n      - 8000-8010:8000\n"), {
    line: 5,
    path: "services.web.ports[0]",
    message: /the published range and the container range must have the same length/,
  });
  const { project } = loadText(
    "services:\n  web:\n    image: nginx\n    ports: ['8000-8002:9000-9002/udp']\n",
  );
  assert.deepEqual(
    project.services.web.ports.map((p) => p.kind === "host" && [p.publishedPort, p.containerPort]),
    [
      [8000, 9000],
      [8001, 9001],
      [8002, 9002],
    ],
  );
});

Deno.test("loadCompose() refuses an unknown port protocol", () => {
  onlyIssue(problems("services:\n  web:\n    image: nginx\n    ports: ['80:80/sctp']\n"), {
    line: 4,
    path: "services.web.ports[0]",
    message: /unsupported protocol "sctp"/,
  });
});

Deno.test("loadCompose() publishes short-syntax ports on the host and refuses an explicit mode: ingress", () => {
  const { project } = loadText(
    "services:\n  web:\n    image: nginx\n    ports: ['8080:80', '127.0.0.1:5432:5432', '53:53/udp', '3000']\n",
  );
  assert.deepEqual(project.services.web.ports, [
    { kind: "host", hostIp: null, publishedPort: 8080, containerPort: 80, protocol: "tcp" },
    { kind: "host", hostIp: "127.0.0.1", publishedPort: 5432, containerPort: 5432, protocol: "tcp" },
    { kind: "host", hostIp: null, publishedPort: 53, containerPort: 53, protocol: "udp" },
    { kind: "host", hostIp: null, publishedPort: 0, containerPort: 3000, protocol: "tcp" },
  ]);
  onlyIssue(
    problems(
      "services:\n  web:\n    image: nginx\n    ports:\n      - {target: 80, published: 8081, mode: ingress}\n",
    ),
    {
      line: 5,
      path: "services.web.ports[0].mode",
      message:
        /asks for mode "ingress".*remove "mode" to publish 8081 on each Machine.*x-ports "8081:80\/http"/,
    },
  );
});

Deno.test("loadCompose() refuses bad x-ports entries", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    x-ports:\n      - app.example.com:80/tcp\n      - 80/http@swarm\n      - Bad_Host:80/http\n";
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.path]), [
    [5, "services.web.x-ports[0]"],
    [6, "services.web.x-ports[1]"],
    [7, "services.web.x-ports[2]"],
  ]);
  assert.match(list[0].message, /TCP\/UDP ingress is not supported/);
  assert.match(list[1].message, /invalid port mode in "80\/http@swarm"/);
  assert.match(list[2].message, /invalid ingress hostname "Bad_Host"/);
});

Deno.test("loadCompose() refuses ports and x-ports together", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    ports: [{target: 80, published: 80, mode: host}]\n    x-ports: [80/http]\n";
  onlyIssue(problems(text), { line: 5, path: "services.web.x-ports", message: /cannot both be set/ });
});

Deno.test("loadCompose() refuses x-caddy combined with ingress ports", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    x-ports: [80/http]\n    x-caddy: |\n      a.example.com {\n      }\n";
  onlyIssue(problems(text), {
    line: 5,
    path: "services.web.x-caddy",
    message: /cannot be combined with ingress ports/,
  });
});

Deno.test("loadCompose() refuses bad volume strings", () => {
  const text = [
    "services:",
    "  web:",
    "    image: nginx",
    "    volumes:",
    "      - data",
    "      - ./data:/data",
    "      - a:/b:ro:extra",
    "      - /srv:relative",
    "      - /srv:/x:rx",
    "      - /srv/../etc:/etc2",
  ].join("\n");
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.path]), [
    [5, "services.web.volumes[0]"],
    [6, "services.web.volumes[1]"],
    [7, "services.web.volumes[2]"],
    [8, "services.web.volumes[3]"],
    [9, "services.web.volumes[4]"],
    [10, "services.web.volumes[5]"],
  ]);
  assert.match(list[0].message, /invalid mount target "data": expected an absolute path/);
  assert.match(list[1].message, /cannot read bind mount source ".\/data": no such file/);
  assert.match(list[2].message, /invalid volume "a:\/b:ro:extra"/);
  assert.match(list[3].message, /invalid mount target "relative": expected an absolute path/);
  assert.match(list[4].message, /unknown option "rx"/);
  assert.match(list[5].message, /"\." and "\.\." segments are not allowed/);
});

Deno.test("loadCompose() refuses an undeclared named volume", () => {
  onlyIssue(
    problems("services:\n  db:\n    image: postgres\n    volumes: ['pgdata:/var/lib/postgresql/data']\n"),
    {
      line: 4,
      path: "services.db.volumes[0]",
      message: /volume "pgdata" is not declared under top-level "volumes"/,
    },
  );
});

Deno.test("loadCompose() refuses an undeclared volume in the long syntax at its source", () => {
  const text =
    "services:\n  db:\n    image: postgres\n    volumes:\n      - type: volume\n        source: pgdata\n        target: /data\n";
  onlyIssue(problems(text), {
    line: 6,
    column: 17,
    path: "services.db.volumes[0].source",
    message: /not declared/,
  });
});

Deno.test("loadCompose() refuses the same mount target twice", () => {
  const text = "services:\n  db:\n    image: postgres\n    volumes: ['/a:/data', '/b:/data']\nvolumes: {}\n";
  onlyIssue(problems(text), {
    line: 4,
    path: "services.db.volumes[1]",
    message: /mount target "\/data" is already used/,
  });
});

Deno.test("loadCompose() refuses names with .., / or uppercase", () => {
  const text = [
    "services:",
    "  ..:",
    "    image: nginx",
    "  a/b:",
    "    image: nginx",
    "  Web:",
    "    image: nginx",
    "volumes:",
    "  ../etc: {}",
    "  Data: {}",
  ].join("\n");
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.column, item.path]), [
    [2, 3, "services..."],
    [4, 3, "services.a/b"],
    [6, 3, "services.Web"],
    [9, 3, "volumes.../etc"],
    [10, 3, "volumes.Data"],
  ]);
  assert.match(list[0].message, /invalid service name ".."/);
  assert.match(list[3].message, /invalid volume name "..\/etc"/);
});

Deno.test("loadCompose() refuses a project name with an underscore", () => {
  onlyIssue(problems("name: my_app\nservices:\n  web: {image: nginx}\n"), {
    line: 1,
    column: 7,
    path: "name",
    message: /invalid project name "my_app"/,
  });
});

Deno.test("loadCompose() derives the project name from the directory as Compose does", () => {
  assert.equal(
    loadText("services:\n  web: {image: nginx}\n", { path: "/home/me/My.Shop/compose.yaml" }).project.name,
    "myshop",
  );
  assert.equal(
    loadText("services:\n  web: {image: nginx}\n", { projectName: "other" }).project.name,
    "other",
  );
  const list = problems("services:\n  web: {image: nginx}\n", { path: "/home/me/my_shop/compose.yaml" });
  assert.match(list[0].message, /derived from the directory "my_shop"/);
});

Deno.test("loadCompose() names a missing required variable and where it is used", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    environment:\n      DB_PASSWORD: ${DB_PASSWORD:?set it in .env}\n";
  const found = onlyIssue(problems(text), {
    line: 5,
    column: 20,
    path: "services.web.environment.DB_PASSWORD",
    message: /^required variable "DB_PASSWORD" is unset or empty: set it in .env$/,
  });
  assert.equal(found.file, "/proj/compose.yaml");
});

Deno.test("loadCompose() interpolation handles defaults, escapes and unset variables", () => {
  const text = [
    "services:",
    "  web:",
    "    image: nginx:${TAG-latest}",
    "    environment:",
    "      A: ${EMPTY:-fallback}",
    "      B: ${EMPTY-kept}",
    "      C: $$HOME and $${X}",
    "      D: ${OUTER:-${INNER:-deep}}",
    "      E: $MISSING",
    "      F: ${SET:+replaced}",
  ].join("\n");
  const { project, warnings } = loadText(text, { env: { EMPTY: "", SET: "yes" } });
  assert.equal(project.services.web.image, "nginx:latest");
  assert.deepEqual(project.services.web.environment, {
    A: "fallback",
    B: "",
    C: "$HOME and ${X}",
    D: "deep",
    E: "",
    F: "replaced",
  });
  onlyIssue(warnings, {
    line: 9,
    path: "services.web.environment.E",
    message: /variable "MISSING" is not set/,
  });
});

Deno.test("loadCompose() refuses malformed interpolation", () => {
  const text = "services:\n  web:\n    image: nginx\n    command: echo $1 ${UNCLOSED\n";
  onlyIssue(problems(text), {
    line: 4,
    path: "services.web.command",
    message: /invalid interpolation format.*"\$\$"/,
  });
});

Deno.test("loadCompose() reports a missing env_file naming the file and the service", () => {
  const text = "services:\n  web:\n    image: nginx\n    env_file: [web.env]\n";
  onlyIssue(problems(text), {
    line: 4,
    path: "services.web.env_file[0]",
    message: /^cannot read env file "web.env" for service "web": no such file$/,
  });
});

Deno.test("loadCompose() merges env_file under environment and skips optional missing files", () => {
  const text =
    "services:\n  web:\n    image: nginx\n    env_file:\n      - a.env\n      - path: b.env\n        required: false\n    environment: [B=from-environment]\n";
  const { project } = loadText(text, { files: { "/proj/a.env": "A=1\nB=from-file\n" } });
  assert.deepEqual(project.services.web.environment, { A: "1", B: "from-environment" });
});

Deno.test("loadCompose() reports env_file syntax errors in that file", () => {
  const text = "services:\n  web:\n    image: nginx\n    env_file: web.env\n";
  onlyIssue(problems(text, { files: { "/proj/web.env": "OK=1\n\nnot a var\n" } }), {
    file: "/proj/web.env",
    line: 3,
    path: "",
    message: /^invalid variable name: expected KEY=VALUE$/,
  });
});

Deno.test("loadCompose() refuses a service without image", () => {
  onlyIssue(problems("services:\n  web:\n    command: [sleep, '1']\n"), {
    line: 2,
    column: 3,
    path: "services.web",
    message: /missing required key "image"/,
  });
});

Deno.test("loadCompose() refuses bad durations and byte sizes", () => {
  const text = "services:\n  web:\n    image: nginx\n    stop_grace_period: 10\n    mem_limit: 1.5x\n";
  const list = problems(text);
  assert.deepEqual(list.map((item) => item.path), [
    "services.web.stop_grace_period",
    "services.web.mem_limit",
  ]);
  assert.match(list[0].message, /invalid duration "10"/);
  assert.match(list[1].message, /invalid byte size "1.5x"/);
});

Deno.test("loadCompose() refuses unknown x-pre_deploy keys", () => {
  const text =
    "services:\n  db:\n    image: x\n    x-pre_deploy:\n      command: [migrate]\n      user: root\n";
  onlyIssue(problems(text), {
    line: 6,
    path: "services.db.x-pre_deploy.user",
    message: /unknown key "user" in x-pre_deploy/,
  });
});

Deno.test("loadCompose() refuses reserved ployz. labels", () => {
  onlyIssue(problems("services:\n  web:\n    image: x\n    labels: {ployz.project.name: other}\n"), {
    line: 4,
    path: "services.web.labels.ployz.project.name",
    message: /label "ployz.project.name" is reserved/,
  });
});

Deno.test("loadCompose() refuses x-volumes without a size or of size 0, and on external volumes", () => {
  const text =
    "services:\n  web: {image: x}\nvolumes:\n  ext: {external: true}\nx-volumes:\n  data:\n  zero: 0\n  ext: 1G\n";
  const list = problems(text);
  assert.deepEqual(list.map((item) => [item.line, item.path]), [
    [6, "x-volumes.data"],
    [7, "x-volumes.zero"],
    [
      8,
      "x-volumes.ext",
    ],
  ]);
});

Deno.test("loadCompose() reads x-volumes {} as a Provisioned Volume of the Machine's default size", () => {
  const { project } = loadText(
    "services:\n  db:\n    image: x\n    volumes: [data:/data]\nx-volumes:\n  data: {}\n",
  );
  assert.equal(project.volumes.data.sizeBytes, 0);
});

Deno.test("loadCompose() lets x-volumes declare a Provisioned Volume on its own", () => {
  const { project } = loadText(
    "services:\n  db:\n    image: x\n    volumes: [data:/data]\nx-volumes:\n  data: 10G\n",
  );
  assert.deepEqual(project.volumes.data, {
    name: "data",
    external: false,
    dockerName: "proj_data",
    driver: null,
    driverOptions: {},
    labels: {},
    sizeBytes: 10 * 1024 ** 3,
  });
});

Deno.test("loadCompose() reports every problem in one error, in file order", () => {
  const text = [
    "services:",
    "  web:",
    "    image: nginx",
    "    ports: ['80:abc']",
    "    deploy: {replicas: three}",
    "    volumes: ['ghost:/data']",
    "    foo: bar",
  ].join("\n");
  try {
    loadText(text);
    assert.fail("expected an error");
  } catch (error) {
    assert.ok(error instanceof ComposeError);
    assert.deepEqual(error.issues.map((item) => item.line), [4, 5, 6, 7]);
    assert.match(
      error.message,
      /^Cannot load compose file "\/proj\/compose.yaml": 4 problems\n\/proj\/compose.yaml:4:/,
    );
  }
});

Deno.test("loadCompose() applies YAML merge keys with explicit keys winning", () => {
  const text =
    "x-base: &base\n  image: base\n  restart: always\nservices:\n  web:\n    <<: *base\n    image: own\n";
  const { project } = loadText(text);
  assert.equal(project.services.web.image, "own");
  assert.equal(project.services.web.restart, "always");
});

Deno.test("loadCompose() runs a profiled Service only when one of its profiles is enabled", () => {
  const text = [
    "services:",
    "  web: {image: nginx}",
    "  debug: {image: busybox, profiles: [debug]}",
    "  admin: {image: busybox, profiles: [ops, debug]}",
  ].join("\n");
  const off = loadText(text).project;
  assert.deepEqual(Object.keys(off.services), ["web"]);
  assert.deepEqual(off.profiledOut, ["admin", "debug"]);
  const on = loadCompose({ path: "/proj/compose.yaml", text, env: {}, profiles: ["ops"] }).project;
  assert.deepEqual(Object.keys(on.services), ["admin", "web"]);
  assert.deepEqual(on.profiledOut, ["debug"]);
  const all = loadCompose({ path: "/proj/compose.yaml", text, env: {}, profiles: ["*"] }).project;
  assert.deepEqual(all.profiledOut, []);
  const list = problems(text + "\n  worker: {image: busybox, depends_on: [debug]}\n");
  onlyIssue(list, {
    line: 5,
    path: "services.worker.depends_on",
    message: /service "worker" depends on "debug", which is left out: enable one of its profiles \("debug"\)/,
  });
});
