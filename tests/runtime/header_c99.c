/* Compiled as C99 with -Wall -Wextra -Werror -pedantic: the public headers must stay plain C. The
 * function is linked into the runtime unit test, which calls it, so the C view of the API is
 * exercised too. */
#include <wave/kernel_api.h>
#include <wave/runtime.h>

#include <string.h>

int wave_runtime_header_c99_check(void);

int wave_runtime_header_c99_check(void) {
  wave_device_t device = NULL;
  wave_device_info_t info;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {64, 1, 1};
  memset(&info, 0, sizeof(info));
  if (wave_device_open("emu:nothing", &device) != WAVE_ERROR_INVALID_ARGUMENT || device != NULL)
    return 1;
  if (wave_device_open("emu", &device) != WAVE_SUCCESS || wave_device_info(device, &info) ||
      info.vendor != WAVE_VENDOR_EMULATOR || wave_device_close(device))
    return 5;
  if (wave_launch(NULL, NULL, NULL, grid, block, 0, NULL, 0) != WAVE_ERROR_INVALID_ARGUMENT)
    return 2;
  if (strcmp(wave_status_name(WAVE_SUCCESS), "WAVE_SUCCESS") != 0)
    return 3;
  return wave_last_error()[0] == '\0' ? 4 : 0;
}
