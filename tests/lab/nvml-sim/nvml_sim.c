/*
 * STAND-IN for NVIDIA's libnvidia-ml.so.1 (NVML), for the volta.serving test lab and the real-artifact
 * tier. Not NVIDIA code and never shipped. It implements only the entry points that volta-exporter
 * reaches through the real nvidia-ml-py 13.615.71 bindings (pynvml.py names the C symbols it looks up:
 * nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3, ...), with nvml.h's
 * signatures, struct layouts and return codes as that pynvml.py declares them (see README.md).
 *
 * Values and injected faults come from a flat state file, re-read on every call so a test can change
 * it under a running process: $VOLTA_NVML_SIM_STATE (default /var/lib/volta-lab/nvml-sim/state).
 * Lines: "KEY VALUE" for the system, "INDEX KEY VALUE" per GPU; tests/lab/nvml-sim/nvml_state.py writes it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvml.h return codes (pynvml.py NVML_SUCCESS ... NVML_ERROR_UNKNOWN) */
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

/* nvml.h structs, field for field as pynvml.py declares them */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;

static int initialised;

static const char *state_path(void)
{
    const char *p = getenv("VOLTA_NVML_SIM_STATE");
    return p && *p ? p : "/var/lib/volta-lab/nvml-sim/state";
}

/* Value of KEY (gpu < 0: a system line) into out; 1 when found. */
static int lookup(int gpu, const char *key, char *out, size_t n)
{
    FILE *f = fopen(state_path(), "r");
    char line[512], want[160];
    size_t len;
    int found = 0;

    if (!f)
        return 0;
    if (gpu >= 0)
        snprintf(want, sizeof want, "%d %s ", gpu, key);
    else
        snprintf(want, sizeof want, "%s ", key);
    len = strlen(want);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, want, len) == 0) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, n, "%s", line + len);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static int lookup_ull(int gpu, const char *key, unsigned long long *v)
{
    char buf[64];

    if (!lookup(gpu, key, buf, sizeof buf))
        return 0;
    *v = strtoull(buf, NULL, 0);
    return 1;
}

static unsigned int count(void)
{
    unsigned long long n = 0;

    lookup_ull(-1, "count", &n);
    return (unsigned int)n;
}

/* The GPU index of a handle, or a return code (< 0 means -code) for a bad handle or an injected fault. */
static int gpu_of(nvmlDevice_t device, const char *fn, int *gpu)
{
    uintptr_t h = (uintptr_t)device;
    char key[96];
    unsigned long long code;

    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (h == 0 || h > count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *gpu = (int)h - 1;
    snprintf(key, sizeof key, "fail.%s", fn);
    if (lookup_ull(*gpu, key, &code) || lookup_ull(*gpu, "fail.all", &code))
        return (nvmlReturn_t)code;
    return NVML_SUCCESS;
}

/* A per-GPU unsigned value, NOT_SUPPORTED when the state file has no such key. */
static nvmlReturn_t uint_value(nvmlDevice_t device, const char *fn, const char *key, unsigned int *out)
{
    int gpu;
    unsigned long long v;
    nvmlReturn_t rc = gpu_of(device, fn, &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!lookup_ull(gpu, key, &v))
        return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned int)v;
    return NVML_SUCCESS;
}

static nvmlReturn_t string_value(int gpu, const char *key, char *buf, unsigned int length)
{
    char v[256];

    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!lookup(gpu, key, v, sizeof v))
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(v) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, v, strlen(v) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    unsigned long long code = 0;

    (void)flags;
    if (lookup_ull(-1, "init_error", &code) && code)
        return (nvmlReturn_t)code;
    FILE *f = fopen(state_path(), "r");
    if (!f)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    fclose(f);
    initialised++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    return string_value(-1, "driver_version", version, length);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = count();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    unsigned long long code;

    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= count())
        return NVML_ERROR_INVALID_ARGUMENT;
    if (lookup_ull((int)index, "fail.nvmlDeviceGetHandleByIndex_v2", &code))
        return (nvmlReturn_t)code;
    *device = (nvmlDevice_t)(uintptr_t)(index + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    int gpu;
    char bus_id[32];
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetPciInfo_v3", &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!lookup(gpu, "bus_id", bus_id, sizeof bus_id))
        return NVML_ERROR_NOT_SUPPORTED;
    memset(pci, 0, sizeof *pci);
    memcpy(pci->busId, bus_id, sizeof pci->busId);
    pci->busId[sizeof pci->busId - 1] = 0;
    sscanf(bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
    pci->pciDeviceId = 0x1DB510DE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    int gpu;
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetName", &gpu);

    return rc != NVML_SUCCESS ? rc : string_value(gpu, "name", name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    int gpu;
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetUUID", &gpu);

    return rc != NVML_SUCCESS ? rc : string_value(gpu, "uuid", uuid, length);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    unsigned int gpu_util;
    nvmlReturn_t rc = uint_value(device, "nvmlDeviceGetUtilizationRates", "util", &gpu_util);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    utilization->gpu = gpu_util;
    utilization->memory = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    int gpu;
    unsigned long long total, used;
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetMemoryInfo", &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!lookup_ull(gpu, "mem_total", &total) || !lookup_ull(gpu, "mem_used", &used))
        return NVML_ERROR_NOT_SUPPORTED;
    memory->total = total;
    memory->used = used;
    memory->free = total - used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp)
{
    if (sensorType != 0) /* NVML_TEMPERATURE_GPU */
        return NVML_ERROR_INVALID_ARGUMENT;
    return uint_value(device, "nvmlDeviceGetTemperature", "temp", temp);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    return uint_value(device, "nvmlDeviceGetPowerUsage", "power_mw", power);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    return uint_value(device, "nvmlDeviceGetEnforcedPowerLimit", "limit_mw", limit);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    if (type == 1) /* NVML_CLOCK_SM */
        return uint_value(device, "nvmlDeviceGetClockInfo", "sm_mhz", clock);
    if (type == 2) /* NVML_CLOCK_MEM */
        return uint_value(device, "nvmlDeviceGetClockInfo", "mem_mhz", clock);
    return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    int gpu;
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetCurrentClocksEventReasons", &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!reasons)
        return NVML_ERROR_INVALID_ARGUMENT;
    return lookup_ull(gpu, "reasons", reasons) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                         unsigned long long *eccCounts)
{
    int gpu;
    char key[64];
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetTotalEccErrors", &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!eccCounts || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(key, sizeof key, "ecc.%d.%d", errorType, counterType);
    return lookup_ull(gpu, key, eccCounts) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* Two-call protocol of nvml.h: a too-small (or NULL) buffer gets the count and INSUFFICIENT_SIZE. */
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int *pageCount,
                                       unsigned long long *addresses)
{
    int gpu;
    char key[64];
    unsigned long long n;
    nvmlReturn_t rc = gpu_of(device, "nvmlDeviceGetRetiredPages", &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!pageCount || cause < 0 || cause > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(key, sizeof key, "retired.%d", cause);
    if (!lookup_ull(gpu, key, &n))
        return NVML_ERROR_NOT_SUPPORTED;
    if (!addresses || *pageCount < n) {
        *pageCount = (unsigned int)n;
        return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    for (unsigned long long i = 0; i < n; i++)
        addresses[i] = 0x100000ULL * (unsigned long long)(gpu + 1) + 0x1000ULL * (i + 1) + (unsigned long long)cause;
    *pageCount = (unsigned int)n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int *isPending)
{
    unsigned int v;
    nvmlReturn_t rc = uint_value(device, "nvmlDeviceGetRetiredPagesPendingStatus", "pending", &v);

    if (rc == NVML_SUCCESS)
        *isPending = v ? 1 : 0; /* NVML_FEATURE_ENABLED / DISABLED */
    return rc;
}

/* Links 0..nvlinks-1 exist; nvlinks 0 (or absent) is a GPU without NVLink: NOT_SUPPORTED. */
static nvmlReturn_t nvlink_gpu(nvmlDevice_t device, const char *fn, unsigned int link, int *gpu)
{
    unsigned long long links = 0;
    nvmlReturn_t rc = gpu_of(device, fn, gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    lookup_ull(*gpu, "nvlinks", &links);
    if (!links)
        return NVML_ERROR_NOT_SUPPORTED;
    return link < links ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive)
{
    int gpu;
    char key[64];
    unsigned long long v = 1;
    nvmlReturn_t rc = nvlink_gpu(device, "nvmlDeviceGetNvLinkState", link, &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!isActive)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(key, sizeof key, "nvlink.%u.state", link);
    lookup_ull(gpu, key, &v);
    *isActive = v ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link, int counter,
                                             unsigned long long *counterValue)
{
    int gpu;
    char key[64];
    unsigned long long v = 0;
    nvmlReturn_t rc = nvlink_gpu(device, "nvmlDeviceGetNvLinkErrorCounter", link, &gpu);

    if (rc != NVML_SUCCESS)
        return rc;
    if (!counterValue || counter < 0 || counter > 4) /* NVML_NVLINK_ERROR_DL_REPLAY .. _ECC_DATA */
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(key, sizeof key, "nvlink.%u.%d", link, counter);
    lookup_ull(gpu, key, &v);
    *counterValue = v;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)
{
    return uint_value(device, "nvmlDeviceGetCurrPcieLinkGeneration", "pcie_gen_current", currLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)
{
    return uint_value(device, "nvmlDeviceGetMaxPcieLinkGeneration", "pcie_gen_max", maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
    return uint_value(device, "nvmlDeviceGetCurrPcieLinkWidth", "pcie_width_current", currLinkWidth);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)
{
    return uint_value(device, "nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max", maxLinkWidth);
}
