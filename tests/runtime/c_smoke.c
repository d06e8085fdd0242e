/* A C host program linked against libwave_runtime.so through the public header only, as a
 * generated stub's user would be. It must run anywhere: with no GPU, opening a device fails with
 * a status and a message, and the program reports it instead of crashing. */
#include <wave/runtime.h>

#include <stdio.h>

int main(void) {
  wave_device_t device = NULL;
  wave_status_t status = wave_device_open("auto", &device);
  if (status != WAVE_SUCCESS) {
    printf("no device: %s: %s\n", wave_status_name(status), wave_last_error());
    return device == NULL ? 0 : 1;
  }
  wave_device_info_t info;
  if (wave_device_info(device, &info) != WAVE_SUCCESS)
    return 1;
  printf("%s://%d: %s (%s), warp %u, %u SMs/CUs\n", info.backend, info.ordinal, info.name,
         info.arch, info.warp_size, info.multiprocessor_count);
  return wave_device_close(device) == WAVE_SUCCESS ? 0 : 1;
}
