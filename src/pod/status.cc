#include "pod/model.h"  // placeholder, replaced by its owner
