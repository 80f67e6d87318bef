// SPDX-License-Identifier: GPL-3.0-or-later
// The Flamenco job type docs/flamenco/unified_particles_bake_render.js, compiled with a stub of
// Flamenco Manager's job compiler API (flamenco_stub.js). Run: node --test tests/farm/

"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const nodePath = require("node:path");

const stub = require("./flamenco_stub.js");

const JOB_FILE = nodePath.join(__dirname, "..", "..", "docs", "flamenco", "unified_particles_bake_render.js");
const BLEND = "/shared/jobs/shot-010/shot_010.flamenco.blend";

const jobType = stub.loadJobType(JOB_FILE);

// Settings as the Flamenco add-on submits them for a 1-250 scene rendering PNGs at 24 fps.
function settings(overrides = {}) {
    return {
        ...jobType.defaults(),
        frames: "1-250",
        chunk_size: 40,
        bake_frames: "1-250",
        bake_mode: "blender",
        render_output_root: "/shared/render",
        add_path_components: 0,
        render_output_path: "/shared/render/shot-010/{timestamp}/######",
        blendfile: BLEND,
        fps: 24,
        format: "PNG",
        image_file_extension: ".png",
        has_previews: false,
        ...overrides,
    };
}

function compile(overrides) {
    return jobType.compile(settings(overrides));
}

const renderTasks = (job) => job.tasks.filter((t) => t.name.startsWith("render-"));
const depNames = (task) => task.dependencies.map((d) => d.name);

// The command line a `blender-render` command runs, with Flamenco's default variables
// ({blender} = "blender", {blenderArgs} = "-b -y"): {exe} {exeArgs} {argsBefore} {blendfile} {args}.
function blenderCommandLine(command) {
    assert.equal(command.name, "blender-render");
    const p = command.parameters;
    assert.equal(p.exe, "{blender}");
    assert.equal(p.exeArgs, "{blenderArgs}");
    return ["blender", "-b", "-y", ...p.argsBefore, ...(p.blendfile ? [p.blendfile] : []), ...p.args];
}

// compileJob must throw an Error (not a string) whose message matches `pattern`.
function assertRejects(overrides, pattern) {
    assert.throws(() => compile(overrides), (err) => {
        assert.equal(Object.prototype.toString.call(err), "[object Error]", `threw a non-Error: ${String(err)}`);
        assert.match(err.message, pattern);
        return true;
    });
}

test("the job type loads like a Manager script: named after its file, with the documented settings", () => {
    assert.equal(jobType.name, "unified-particles-bake-render");
    assert.equal(jobType.jobType.label, "Unified Particles: Bake and Render");
    const keys = jobType.jobType.settings.map((s) => s.key);
    for (const key of ["frames", "chunk_size", "bake_frames", "bake_mode", "blendfile", "render_output_root",
        "render_output_path", "format", "fps"]) {
        assert.ok(keys.includes(key), `missing setting ${key}`);
    }
    assert.equal(new Set(keys).size, keys.length, "duplicate setting keys");
    for (const setting of jobType.jobType.settings) {
        assert.ok(["string", "int32", "float", "bool"].includes(setting.type), `${setting.key}: type ${setting.type}`);
        if (setting.choices) {
            assert.equal(setting.type, "string", `${setting.key}: choices need a string setting`);
        }
    }
    const bakeMode = jobType.jobType.settings.find((s) => s.key === "bake_mode");
    assert.deepEqual(bakeMode.choices, ["blender", "python-module"]);
    assert.equal(bakeMode.default, "blender");
});

test("the stub's frameChunker matches Flamenco's (cases from js_globals_test.go)", () => {
    const expected = ["1-4", "5-8", "9,10,20,21", "22-25", "40"];
    assert.deepEqual(stub.frameChunker("1..10,20..25,40,3..8", 4), expected);
    assert.deepEqual(stub.frameChunker("1-10,20-25,40", 4), expected);
    assert.deepEqual(stub.frameChunker(" 1  .. 10,\t20..25\n,40   ", 4), expected);
    assert.deepEqual(stub.frameChunker("47", 4), ["47"]);
    assert.deepEqual(stub.frameChunker("1-3", 3), ["1-3"]);
    assert.throws(() => stub.frameChunker("   ", 4), /empty range/);
    assert.throws(() => stub.frameChunker(" 1 10", 4), /1 10/);
    assert.throws(() => stub.frameChunker("1-10", 0), /invalid chunk size/);
    assert.equal(stub.frameCount("1..10,20..25,40"), 17);
    assert.equal(stub.path.join("/a/b/", "c", "../d"), "/a/b/d");
    assert.equal(stub.path.dirname("/render/shot/######"), "/render/shot");
    assert.equal(stub.path.basename("C:\\jobs\\shot.blend"), "shot.blend");
    assert.equal(stub.path.stem("C:\\jobs\\shot.flamenco.blend"), "shot.flamenco");
});

test("the job type accepts the frame syntax Flamenco accepts", () => {
    const job = compile({ frames: " 1  .. 10,\t20..25\n,40   ", chunk_size: 4, bake_frames: "" });
    assert.deepEqual(renderTasks(job).map((t) => t.name),
        ["render-1-4", "render-5-8", "render-9,10,20,21", "render-22-25", "render-40"]);
    assert.equal(job.tasks[0].name, "bake-1-40");
});

test("the bake task comes first, then one render task per chunk, then the preview video", () => {
    const job = compile();
    assert.equal(job.tasks[0].name, "bake-1-250");
    assert.equal(job.tasks[0].type, "blender");
    const renders = renderTasks(job);
    assert.equal(renders.length, 7);
    assert.deepEqual(job.tasks.slice(1, 8).map((t) => t.name), renders.map((t) => t.name));
    assert.equal(job.tasks.length, 9);
    assert.equal(job.tasks[8].name, "preview-video");
    assert.equal(job.tasks.filter((t) => t.name.startsWith("bake")).length, 1);
});

test("1-250 in chunks of 40 renders 7 chunks with the right frame ranges", () => {
    const job = compile();
    const renders = renderTasks(job);
    assert.deepEqual(renders.map((t) => t.name), [
        "render-1-40", "render-41-80", "render-81-120", "render-121-160",
        "render-161-200", "render-201-240", "render-241-250",
    ]);
    const lines = renders.map((t) => blenderCommandLine(t.commands[0]));
    assert.deepEqual(lines.map((l) => l[l.indexOf("--render-frame") + 1]), [
        "1..40", "41..80", "81..120", "121..160", "161..200", "201..240", "241..250",
    ]);
    for (const task of renders) {
        assert.equal(task.type, "blender");
        assert.equal(task.commands.length, 1);
    }
});

test("every render task depends on the bake task, and only on it", () => {
    const job = compile();
    const bake = job.tasks[0];
    for (const task of renderTasks(job)) {
        assert.equal(task.dependencies.length, 1, task.name);
        assert.equal(task.dependencies[0].uuid, bake.uuid, task.name);
    }
    assert.deepEqual(bake.dependencies, []);
});

test("render commands open the baked .blend and render the chunk into the job's output folder", () => {
    const job = compile({ chunk_size: 100 });
    const line = blenderCommandLine(renderTasks(job)[0].commands[0]);
    assert.deepEqual(line, [
        "blender", "-b", "-y", BLEND,
        "--render-output", "/shared/render/shot-010/2024-01-02_030405/######",
        "--render-format", "PNG",
        "--render-frame", "1..100",
    ]);
    assert.equal(job.settings.render_output_path, "/shared/render/shot-010/2024-01-02_030405/######");
});

test("bake mode 'blender': Blender with the extension runs the bake operator and saves the file", () => {
    const job = compile();
    const bake = job.tasks[0];
    assert.equal(bake.commands.length, 1);
    assert.deepEqual(blenderCommandLine(bake.commands[0]), [
        "blender", "-b", "-y", BLEND, "--python-exit-code", "1", "--python-expr",
        "import bpy; bpy.ops.unified_particles.bake(use_custom_range=True, frame_start=1, frame_end=250); " +
            "bpy.ops.wm.save_mainfile()",
    ]);
    // The blend file goes in the `blendfile` parameter, before `args`, as Flamenco's own render does.
    assert.equal(bake.commands[0].parameters.blendfile, BLEND);
    assert.deepEqual(bake.commands[0].parameters.argsBefore, []);
});

test("bake mode 'python-module': python -m unified_particles.farm <blend> --frames S:E", () => {
    const job = compile({ bake_mode: "python-module" });
    const bake = job.tasks[0];
    assert.equal(bake.type, "blender");
    assert.deepEqual(bake.commands, [{
        name: "exec",
        parameters: { exe: "python", args: ["-m", "unified_particles.farm", BLEND, "--frames", "1:250"] },
        totalStepCount: 0,
    }]);
    const custom = compile({ bake_mode: "python-module", python_exe: "/opt/bpy-venv/bin/python" });
    assert.equal(custom.tasks[0].commands[0].parameters.exe, "/opt/bpy-venv/bin/python");
    // Render tasks are the same in both modes.
    assert.deepEqual(renderTasks(job).map((t) => t.commands), renderTasks(compile()).map((t) => t.commands));
});

test("rendering a sub-range bakes from the simulation start to the last rendered frame", () => {
    const job = compile({ frames: "100-150", chunk_size: 10, bake_frames: "1-250" });
    assert.equal(job.tasks[0].name, "bake-1-250");
    assert.match(job.tasks[0].commands[0].parameters.args.at(-1), /frame_start=1, frame_end=250\)/);
    assert.deepEqual(renderTasks(job).map((t) => t.name), [
        "render-100-109", "render-110-119", "render-120-129", "render-130-139", "render-140-149", "render-150",
    ]);
    const toLast = compile({ frames: "100-150", bake_frames: "1..150", bake_mode: "python-module" });
    assert.deepEqual(toLast.tasks[0].commands[0].parameters.args.slice(-2), ["--frames", "1:150"]);
});

test("an empty bake_frames bakes the span of the rendered frames", () => {
    for (const empty of ["", "  ", undefined]) {
        const job = compile({ frames: "5-20,30", bake_frames: empty, chunk_size: 8 });
        assert.equal(job.tasks[0].name, "bake-5-30");
        assert.equal(job.settings.bake_frames, "5-30");
        assert.deepEqual(renderTasks(job).map((t) => t.name), ["render-5-12", "render-13-20", "render-30"]);
    }
});

test("the preview video depends on all render tasks", () => {
    const job = compile();
    const video = job.tasks.at(-1);
    assert.equal(video.name, "preview-video");
    assert.equal(video.type, "ffmpeg");
    assert.deepEqual(depNames(video), renderTasks(job).map((t) => t.name));
    const command = video.commands[0];
    assert.equal(command.name, "frames-to-video");
    assert.equal(command.parameters.fps, 24);
    assert.equal(command.parameters.inputGlob, "/shared/render/shot-010/2024-01-02_030405/*.png");
    assert.equal(command.parameters.outputFile, "/shared/render/shot-010/2024-01-02_030405/shot_010-1-250.mp4");
});

test("no preview video without a frame rate, or for EXR without previews", () => {
    for (const overrides of [{ fps: 0 }, { format: "OPEN_EXR", image_file_extension: ".exr" }]) {
        const job = compile(overrides);
        assert.ok(!job.tasks.some((t) => t.name === "preview-video"), JSON.stringify(overrides));
        assert.equal(job.tasks.length, 8);
    }
    const exr = compile({ format: "OPEN_EXR", image_file_extension: ".exr", has_previews: true });
    assert.match(exr.tasks.at(-1).commands[0].parameters.inputGlob, /\*\.jpg$/);
});

test("bad frame ranges throw an Error that names the setting and shows the syntax", () => {
    assertRejects({ frames: "" }, /'frames' setting is empty.*"1-250"/);
    assertRejects({ frames: "250-1" }, /invalid frames "250-1": "250-1" ends before it starts/);
    assertRejects({ frames: "1-abc" }, /invalid frames "1-abc" \(at "1-abc"\)\. Use e\.g\. "1-250"/);
    assertRejects({ frames: "1-10-20" }, /invalid frames/);
    assertRejects({ frames: "1.5-10" }, /invalid frames/);
    assertRejects({ frames: "1-10,,20" }, /invalid frames "1-10,,20" \(at ""\)/);
});

test("bad bake ranges throw a helpful Error", () => {
    assertRejects({ frames: "1-250", bake_frames: "1-200" },
        /bake_frames "1-200" ends before the last rendered frame 250; bake from the simulation start to at least frame 250/);
    assertRejects({ bake_frames: "1-100,200-250" }, /bake_frames "1-100,200-250" must be one range START-END/);
    assertRejects({ bake_frames: "x" }, /invalid bake_frames "x"/);
    // Starting after the first rendered frame is allowed (frames before the simulation start).
    assert.equal(compile({ frames: "1-250", bake_frames: "20-250" }).tasks[0].name, "bake-20-250");
});

test("other bad settings throw a helpful Error", () => {
    assertRejects({ chunk_size: 0 }, /chunk_size must be a whole number of frames, 1 or more, got 0/);
    assertRejects({ chunk_size: 2.5 }, /chunk_size/);
    assertRejects({ chunk_size: "many" }, /chunk_size/);
    assertRejects({ bake_mode: "houdini" }, /unknown bake_mode "houdini"; use one of "blender", "python-module"/);
    assertRejects({ blendfile: "" }, /'blendfile' setting is empty/);
    assertRejects({ bake_mode: "python-module", python_exe: "" }, /'python_exe' setting is empty/);
    assertRejects({ format: "FFMPEG" }, /only renders images, and not "FFMPEG"/);
    assertRejects({ render_output_path: "" }, /no render_output_path/);
});

test("chunks follow Flamenco's frameChunker for frame lists", () => {
    const job = compile({ frames: "1-3, 10, 20-21", chunk_size: 2, bake_frames: "1-21" });
    assert.deepEqual(renderTasks(job).map((t) => t.name), ["render-1,2", "render-3,10", "render-20,21"]);
    const frameArgs = renderTasks(job).map((t) => t.commands[0].parameters.args.at(-1));
    assert.deepEqual(frameArgs, ["1,2", "3,10", "20,21"]);
    // The video is named after the first and last frame when the range is a list.
    assert.match(job.tasks.at(-1).commands[0].parameters.outputFile, /shot_010-1-21\.mp4$/);
});

test("the script needs nothing but Flamenco's globals (no require, no module.exports)", () => {
    // loadJobType ran it in a context holding only the Manager's globals; compileJob worked above.
    const context = jobType.context;
    const vm = require("node:vm");
    assert.equal(vm.runInContext("typeof module", context), "undefined");
    assert.equal(vm.runInContext("typeof require", context), "undefined");
    assert.equal(vm.runInContext("typeof compileJob", context), "function");
});
